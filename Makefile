# Entry points. `make demo` and `make test` each work alone on a fresh machine: they install what
# is missing (scripts/setup), configure and build first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup configure build test test-asan demo bench format clean

all: build

setup:
	@scripts/setup

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

configure: setup $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTESSERA_SANITIZE=ON $(CMAKE_ARGS)

test-asan: setup $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# The demo (issue 8) is not built yet: say what it will do, and fail rather than pretend.
demo: build
	@if $(BUILD)/bin/tessera demo --help >/dev/null 2>&1; then $(BUILD)/bin/tessera demo; else \
	  echo "make demo: not available yet. It will start a fake API server, the Tessera scheduler and"; \
	  echo "two simulated GPU nodes on this machine, create pods in each request dialect, and narrate"; \
	  echo "placement, isolation and what kubectl tessera inspect shows."; exit 1; fi

bench: build
	scripts/bench $(BUILD)

format:
	git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
