// hook_churn: one worker process of the memory-limit stress test (hook_churn_test). Its threads
// allocate blocks of random size and free random held blocks, any thread freeing any thread's
// block, as fast as they can, until the time is up; the test runs many of them at once over one
// shared region and checks the device's peak against the limit.
//
//   hook_churn <route> <milliseconds> <seed> <threads> <min bytes> <max bytes> <most held> <end>
//
// route: direct | runtime | runtime-ptds (probe_api.h). A refused allocation frees a random held
// block; otherwise one step in three frees one. An allocation that would take what the process
// holds (in 2 MiB granules, as charged) past <most held> bytes is not made. A third of the frees
// are cuMemFreeAsync on the null stream. end: "free" frees everything before exiting, "keep" exits
// (normally, through the destructors) holding what it holds, "wait" holds it until killed. Prints
// "allocations=N refused=N"; exits 0, or 1 when a call failed otherwise than over the limit.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "probe_api.h"

namespace tessera::hooktest {
namespace {

Api api;
std::atomic<int> failures{0};

constexpr uint64_t kGranule = 2ull << 20;  // what an allocation is charged in

void Fail(const char* what, CUresult rc) {
  std::fprintf(stderr, "churn: %s returned %d\n", what, (int)rc);
  failures.fetch_add(1);
}

// A block and what it is charged.
struct Block {
  CUdeviceptr p = 0;
  uint64_t charged = 0;
};

// The blocks every thread holds, any of which any thread may free, and what they are charged,
// counted from before an allocation until after its free (never below what the process holds).
class Held {
 public:
  explicit Held(uint64_t most) : most_(most) {}
  // Counts `charged` bytes about to be allocated; false (nothing counted) when that would take
  // the process past its most.
  bool Reserve(uint64_t charged) {
    if (charged_.fetch_add(charged) + charged <= most_) return true;
    charged_.fetch_sub(charged);
    return false;
  }
  void Unreserve(uint64_t charged) { charged_.fetch_sub(charged); }
  void Add(Block b) {
    std::lock_guard<std::mutex> guard(mu_);
    blocks_.push_back(b);
  }
  // Removes a random block; p is 0 when none is held.
  Block TakeRandom(std::mt19937_64& random) {
    std::lock_guard<std::mutex> guard(mu_);
    if (blocks_.empty()) return {};
    size_t i = random() % blocks_.size();
    Block b = blocks_[i];
    blocks_[i] = blocks_.back();
    blocks_.pop_back();
    return b;
  }
  std::vector<Block> TakeAll() {
    std::lock_guard<std::mutex> guard(mu_);
    return std::move(blocks_);
  }

 private:
  const uint64_t most_;
  std::atomic<uint64_t> charged_{0};
  std::mutex mu_;
  std::vector<Block> blocks_;
};

struct Totals {
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> refused{0};
};

void FreeOne(Block b, Held& held, std::mt19937_64& random) {
  if (random() % 3 == 0) {
    CUresult rc = api.MemFreeAsync(b.p, nullptr);
    if (rc != CUDA_SUCCESS) Fail("cuMemFreeAsync", rc);
  } else {
    CUresult rc = api.MemFree(b.p);
    if (rc != CUDA_SUCCESS) Fail("cuMemFree", rc);
  }
  held.Unreserve(b.charged);
}

void Worker(CUcontext ctx, uint64_t seed, std::chrono::steady_clock::time_point end, uint64_t min,
            uint64_t max, Held& held, Totals& totals) {
  if (CUresult rc = api.CtxSetCurrent(ctx); rc != CUDA_SUCCESS) return Fail("cuCtxSetCurrent", rc);
  std::mt19937_64 random(seed);
  while (std::chrono::steady_clock::now() < end) {
    if (random() % 3 == 0) {
      if (Block b = held.TakeRandom(random); b.p != 0) FreeOne(b, held, random);
      continue;
    }
    uint64_t bytes = min + random() % (max - min + 1);
    uint64_t charged = (bytes + kGranule - 1) / kGranule * kGranule;
    if (!held.Reserve(charged)) continue;
    CUdeviceptr p = 0;
    CUresult rc = api.MemAlloc(&p, bytes);
    if (rc == CUDA_SUCCESS) {
      held.Add({p, charged});
      totals.ok.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    held.Unreserve(charged);
    if (rc != CUDA_ERROR_OUT_OF_MEMORY) return Fail("cuMemAlloc", rc);
    totals.refused.fetch_add(1, std::memory_order_relaxed);
    if (Block b = held.TakeRandom(random); b.p != 0) FreeOne(b, held, random);
  }
}

int Run(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr,
                 "usage: hook_churn direct|runtime|runtime-ptds <milliseconds> <seed> <threads> "
                 "<min bytes> <max bytes> <most held bytes> free|keep|wait\n");
    return 2;
  }
  std::string error = LoadApi(argv[1], &api);
  if (!error.empty()) {
    std::fprintf(stderr, "churn: %s\n", error.c_str());
    return 1;
  }
  uint64_t millis = std::strtoull(argv[2], nullptr, 0);
  uint64_t seed = std::strtoull(argv[3], nullptr, 0);
  int threads = std::atoi(argv[4]);
  uint64_t min = std::strtoull(argv[5], nullptr, 0), max = std::strtoull(argv[6], nullptr, 0);
  uint64_t most = std::strtoull(argv[7], nullptr, 0);
  std::string ending = argv[8];
  if (threads < 1 || min == 0 || max < min || most < max ||
      (ending != "free" && ending != "keep" && ending != "wait")) {
    std::fprintf(stderr, "churn: bad arguments\n");
    return 2;
  }
  CUdevice dev;
  CUcontext ctx;
  if (CUresult rc = api.Init(0); rc != CUDA_SUCCESS) return Fail("cuInit", rc), 1;
  if (CUresult rc = api.DeviceGet(&dev, 0); rc != CUDA_SUCCESS) return Fail("cuDeviceGet", rc), 1;
  if (CUresult rc = api.PrimaryCtxRetain(&ctx, dev); rc != CUDA_SUCCESS) {
    return Fail("cuDevicePrimaryCtxRetain", rc), 1;
  }
  Held held(most);
  Totals totals;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(millis);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back(Worker, ctx, seed * 1000003 + i, end, min, max, std::ref(held),
                         std::ref(totals));
  }
  for (auto& w : workers) w.join();
  std::printf("allocations=%llu refused=%llu\n", (unsigned long long)totals.ok.load(),
              (unsigned long long)totals.refused.load());
  std::fflush(stdout);
  if (ending == "free") {
    api.CtxSetCurrent(ctx);
    for (Block b : held.TakeAll()) {
      if (CUresult rc = api.MemFree(b.p); rc != CUDA_SUCCESS) Fail("cuMemFree", rc);
    }
  } else if (ending == "wait") {
    for (;;) pause();
  }
  return failures.load() ? 1 : 0;
}

}  // namespace
}  // namespace tessera::hooktest

int main(int argc, char** argv) {
  return tessera::hooktest::Run(argc, argv);
}
