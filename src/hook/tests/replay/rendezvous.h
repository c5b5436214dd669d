// The ranks of a replayed multi-process job and the hub between them, as a launcher (torchrun,
// mpirun) and a store (c10d, NCCL's bootstrap) are for the real programs: the hub forks the ranks
// before any of them touches the driver, then serves all-gathers in rounds: every rank sends a blob
// (and file descriptors, passed with SCM_RIGHTS as NCCL passes cuMem handles between processes)
// and receives every rank's. A rank that exits or reports early fails the job: the hub kills the
// rest rather than leave them waiting.
//
// Thread-compatible: a Rank is used by its process's main thread.
#ifndef TESSERA_HOOK_TESTS_REPLAY_RENDEZVOUS_H_
#define TESSERA_HOOK_TESTS_REPLAY_RENDEZVOUS_H_

#include <functional>
#include <string>
#include <vector>

namespace tessera::replay {

class Rank {
 public:
  Rank(int rank, int size, int fd) : rank_(rank), size_(size), fd_(fd) {}
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sends `blob` with `fds`; returns every rank's blob in rank order, and when `fds_out` is given,
  // every rank's descriptors (received copies; the caller closes them). Throws std::runtime_error
  // when the hub is gone.
  std::vector<std::string> AllGather(const std::string& blob, const std::vector<int>& fds = {},
                                     std::vector<std::vector<int>>* fds_out = nullptr);
  void Barrier() { AllGather(""); }

  // The rank's result (its last message): the hub returns it from RunRanks.
  void Report(const std::string& result);

 private:
  int rank_;
  int size_;
  int fd_;
};

struct RankResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string result;  // what it reported, or empty
};

// Runs `body` in `size` forked ranks and serves them until all have reported and exited (or one
// failed). Returns each rank's result in rank order.
std::vector<RankResult> RunRanks(int size, const std::function<int(Rank&)>& body);

}  // namespace tessera::replay

#endif  // TESSERA_HOOK_TESTS_REPLAY_RENDEZVOUS_H_
