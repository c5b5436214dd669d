# Entry points. `make demo` and `make test` each work alone on a fresh machine: they install what
# is missing (scripts/setup), configure and build first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup configure build components images test test-asan demo bench format clean

all: build

setup:
	@scripts/setup

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The upstream programs of the dev cluster (testing/cluster/build-components): built once per
# machine into a cache, in seconds afterwards.
components: setup
	@testing/cluster/build-components >/dev/null

# The container images as OCI archives in $(BUILD)/images/ (docs/install.md: pushing them).
images: build components
	cmake --build $(BUILD) --target images

test: build components
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTESSERA_SANITIZE=ON $(CMAKE_ARGS)

test-asan: setup components $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# The demo (docs/demo.md): a narrated cluster on this machine; exits non-zero when a step fails.
demo: build components
	$(BUILD)/bin/tessera demo

bench: build
	scripts/bench $(BUILD)

format:
	git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
