// Issue 28: an exhaustive check of the shared region's charge/release protocol, as
// docs/in-container-library.md writes it down ("The protocol as a state machine"). A few
// processes, some with two threads, allocate and free against one limit; any process may be
// killed at any point; processes exit holding memory; a sweeper frees dead slots whenever it runs;
// a late process reconciles. Every interleaving of their atomic steps is explored (depth-first,
// each state once), and in every reachable state
//   (1) the device holds no more than the limit, and
//   (2) the region's total is at least what the device holds for the container.
// The same search run on the rule the library had before issue 28 (a process gives its slot back
// in its exit destructor, before the driver frees what it still holds) and on a kernel that would
// drop the liveness lock before the driver frees must find a violation: the check can fail, and the
// protocol's one assumption is shown to be needed.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

namespace tessera::hooktest {
namespace {

constexpr int kLimit = 2;

enum class Op { kAlloc, kFree, kExit };

struct Instr {
  Op op;
  int arg;  // kAlloc: units; kFree: index of the thread's block to free
};

struct ThreadSpec {
  int process;
  std::vector<Instr> program;
};

struct Rules {
  bool release_slot_at_exit = false;  // the rule before issue 28
  bool lock_may_drop_first = false;   // a kernel that drops the lock before the driver frees
};

// Steps within one instruction (the atomic operations of src/hook/region.c and charge.c).
enum Step : uint8_t {
  kStart = 0,
  // alloc: the total's compare-and-swap, the slot's add, the driver's allocation
  kCharged,
  kSlotAdded,
  // free: the driver's free, the slot's subtract, the total's subtract
  kDriverFreed,
  kSlotTaken,
};

constexpr int kMaxThreads = 4;
constexpr int kMaxProcesses = 3;
constexpr int kMaxBlocks = 3;

struct State {
  // Per thread.
  std::array<uint8_t, kMaxThreads> pc{};
  std::array<uint8_t, kMaxThreads> step{};
  std::array<uint8_t, kMaxThreads> given{};  // a free's amount taken out of the slot
  std::array<std::array<uint8_t, kMaxBlocks>, kMaxThreads> block{};  // units held, per block
  // Per process.
  std::array<uint8_t, kMaxProcesses> running{};  // 1 until exit or kill
  std::array<uint8_t, kMaxProcesses> has_slot{};
  std::array<uint8_t, kMaxProcesses> slot_used{};
  std::array<uint8_t, kMaxProcesses> locked{};     // the liveness lock is held
  std::array<uint8_t, kMaxProcesses> device{};     // what the driver holds for it
  std::array<uint8_t, kMaxProcesses> driver_up{};  // its device files are still open
  // Shared.
  uint8_t total = 0;
  uint8_t sweeping = 0;  // 1 + the slot being freed by the sweeper, 0 when idle
  uint8_t sweep_amount = 0;

  std::string Key() const {
    std::string k;
    auto put = [&k](const auto& a) { k.append(reinterpret_cast<const char*>(a.data()), a.size()); };
    put(pc), put(step), put(given), put(running), put(has_slot), put(slot_used), put(locked);
    put(device), put(driver_up);
    for (const auto& b : block) put(b);
    k.push_back(static_cast<char>(total)), k.push_back(static_cast<char>(sweeping));
    k.push_back(static_cast<char>(sweep_amount));
    return k;
  }
};

class Checker {
 public:
  Checker(std::vector<ThreadSpec> threads, int processes, Rules rules)
      : threads_(std::move(threads)), processes_(processes), rules_(rules) {}

  // Explores every interleaving; returns the first violation found, or "".
  std::string Run() {
    State s;
    for (int p = 0; p < processes_; ++p) s.running[p] = 1, s.driver_up[p] = 1;
    std::vector<State> stack = {s};
    while (!stack.empty()) {
      State cur = stack.back();
      stack.pop_back();
      if (!seen_.insert(cur.Key()).second) continue;
      if (std::string v = Violation(cur); !v.empty()) return v;
      for (const State& next : Successors(cur)) stack.push_back(next);
    }
    return "";
  }

  size_t states() const { return seen_.size(); }

  // Only (1) when `total_too` is false: the device itself past the limit.
  void set_total_too(bool v) { total_too_ = v; }

 private:
  std::string Violation(const State& s) const {
    int held = 0;
    for (uint8_t d : s.device) held += d;
    if (held > kLimit) return "the device holds " + std::to_string(held) + " units, over the limit";
    if (total_too_ && held > s.total) {
      return "the region's total " + std::to_string(s.total) + " is below the " +
             std::to_string(held) + " units the device holds";
    }
    return "";
  }

  // take_slot under the region's lock: when no other slot's process lives, reconcile first.
  void TakeSlot(State& s, int p) const {
    bool other_alive = false;
    for (int q = 0; q < processes_; ++q) other_alive |= q != p && s.has_slot[q] && s.locked[q];
    if (!other_alive) {
      for (int q = 0; q < processes_; ++q) s.has_slot[q] = 0, s.slot_used[q] = 0;
      s.total = 0;
    }
    s.has_slot[p] = 1;
    s.locked[p] = 1;
  }

  void Die(State& s, int p) const {
    s.running[p] = 0;  // its threads run no further
  }

  std::vector<State> Successors(const State& s) const {
    std::vector<State> out;
    for (int t = 0; t < static_cast<int>(threads_.size()); ++t) ThreadStep(s, t, out);
    for (int p = 0; p < processes_; ++p) {
      if (s.running[p]) {  // SIGKILL, anywhere
        State n = s;
        Die(n, p);
        out.push_back(n);
      }
      // The kernel closes a dead process's files: the driver frees its memory, and the liveness
      // lock drops; the driver first unless the rules let the lock go first.
      if (!s.running[p] && s.driver_up[p]) {
        State n = s;
        n.driver_up[p] = 0;
        n.device[p] = 0;
        out.push_back(n);
      }
      if (!s.running[p] && s.locked[p] && (!s.driver_up[p] || rules_.lock_may_drop_first)) {
        State n = s;
        n.locked[p] = 0;
        out.push_back(n);
      }
    }
    SweeperStep(s, out);
    return out;
  }

  // The sweeper (any process's reaper or refused charge): frees one dead slot, slot first (under
  // the region's lock, which take_slot also needs), then the total.
  void SweeperStep(const State& s, std::vector<State>& out) const {
    if (s.sweeping) {
      State n = s;
      n.total -= std::min(n.total, n.sweep_amount);
      n.sweeping = 0, n.sweep_amount = 0;
      out.push_back(n);
      return;
    }
    for (int p = 0; p < processes_; ++p) {
      if (!s.has_slot[p] || s.locked[p]) continue;
      State n = s;
      n.sweep_amount = n.slot_used[p];
      n.slot_used[p] = 0;
      n.has_slot[p] = 0;
      n.sweeping = static_cast<uint8_t>(1 + p);
      out.push_back(n);
    }
  }

  void ThreadStep(const State& s, int t, std::vector<State>& out) const {
    const ThreadSpec& spec = threads_[t];
    int p = spec.process;
    if (!s.running[p] || s.pc[t] >= spec.program.size()) return;
    const Instr& in = spec.program[s.pc[t]];
    State n = s;
    auto next_instr = [&n, t] { ++n.pc[t], n.step[t] = kStart, n.given[t] = 0; };
    switch (in.op) {
      case Op::kAlloc: {
        int block = CountAllocsBefore(spec, s.pc[t]);
        if (s.step[t] == kStart) {
          if (!s.has_slot[p]) {
            if (s.sweeping) return;  // take_slot waits for the region's lock
            TakeSlot(n, p);
          }
          if (n.total + in.arg > kLimit) {
            next_instr();  // refused
          } else {
            n.total += in.arg;
            n.step[t] = kCharged;
          }
        } else if (s.step[t] == kCharged) {
          n.slot_used[p] += in.arg;
          n.step[t] = kSlotAdded;
        } else {
          n.device[p] += in.arg;
          n.block[t][block] = static_cast<uint8_t>(in.arg);
          next_instr();
        }
        break;
      }
      case Op::kFree: {
        uint8_t units = s.block[t][in.arg];
        if (units == 0) {
          next_instr();  // its allocation was refused
        } else if (s.step[t] == kStart) {
          n.device[p] -= units;
          n.step[t] = kDriverFreed;
        } else if (s.step[t] == kDriverFreed) {
          // region_uncharge: out of the slot (never more than it holds), unless a sweep took it
          uint8_t give = n.has_slot[p] ? std::min(n.slot_used[p], units) : 0;
          n.slot_used[p] -= give;
          n.given[t] = give;
          n.step[t] = kSlotTaken;
        } else {
          n.total -= std::min(n.total, n.given[t]);
          n.block[t][in.arg] = 0;
          next_instr();
        }
        break;
      }
      case Op::kExit:
        if (rules_.release_slot_at_exit && s.has_slot[p]) {
          n.total -= std::min(n.total, n.slot_used[p]);
          n.slot_used[p] = 0;
          n.has_slot[p] = 0;
          n.locked[p] = 0;
        }
        Die(n, p);  // the driver frees what it holds when the kernel closes its files
        break;
    }
    out.push_back(n);
  }

  static int CountAllocsBefore(const ThreadSpec& spec, size_t pc) {
    int n = 0;
    for (size_t i = 0; i < pc; ++i) n += spec.program[i].op == Op::kAlloc;
    return n;
  }

  std::vector<ThreadSpec> threads_;
  int processes_;
  Rules rules_;
  bool total_too_ = true;
  std::unordered_set<std::string> seen_;
};

// Process 0: two threads, one of which exits while the other still allocates and frees. Process 1
// allocates the whole limit, frees it, allocates again and exits holding it. Process 2 allocates
// the whole limit and exits holding it. Blocks are numbered per thread in allocation order.
std::vector<ThreadSpec> Scenario() {
  return {
      {0, {{Op::kAlloc, 1}, {Op::kAlloc, 1}, {Op::kFree, 0}, {Op::kExit, 0}}},
      {0, {{Op::kAlloc, 1}, {Op::kFree, 0}, {Op::kAlloc, 1}}},
      {1, {{Op::kAlloc, 2}, {Op::kFree, 0}, {Op::kAlloc, 1}, {Op::kExit, 0}}},
      {2, {{Op::kAlloc, 2}, {Op::kExit, 0}}},
  };
}

TEST(RegionProtocolModel, NoInterleavingTakesTheDevicePastTheLimit) {
  Checker checker(Scenario(), 3, Rules{});
  EXPECT_EQ(checker.Run(), "");
  EXPECT_GT(checker.states(), 10000u) << "the search should cover many interleavings";
  std::printf("%zu states explored\n", checker.states());
}

// The device past the limit, as the search under `rules` first finds it, or "".
std::string DeviceOverTheLimit(Rules rules) {
  Checker checker(Scenario(), 3, rules);
  checker.set_total_too(false);
  std::string violation = checker.Run();
  std::printf("found: %s\n", violation.c_str());
  return violation;
}

TEST(RegionProtocolModel, ReleasingTheSlotAtExitTakesTheDevicePastTheLimit) {
  EXPECT_NE(DeviceOverTheLimit(Rules{.release_slot_at_exit = true}), "");
}

TEST(RegionProtocolModel, TheProtocolNeedsTheDriverToFreeBeforeTheLockDrops) {
  EXPECT_NE(DeviceOverTheLimit(Rules{.lock_may_drop_first = true}), "");
}

}  // namespace
}  // namespace tessera::hooktest
