// SharedState: this process's view of the simulated machine, the mmap'ed state file in the state
// directory (SIMGPU_STATE, default /dev/shm/simgpu-<uid>), created by the first process that uses
// the directory. See state_layout.h for the layout and docs/simgpu.md for the rules.
//
// Processes are known by PID and start time. When the directory has a driver daemon's socket
// (driver_link.h), Attach() connects to it and the process is known by its host PID, which is
// what makes processes in separate PID namespaces (containers) work; the daemon then frees dead
// processes and Sweep() leaves them to it. Without a daemon, getpid() and /proc are used.
//
// Thread-safety: Attach() is safe from any thread (it opens the file once per process). Every
// other method needs a SharedState::Lock held by the calling thread; the lock is the robust
// process-shared mutex in the file, so a process killed while holding it never blocks the others.
//
//   SharedState* s = ...;            // from Attach()
//   SharedState::Lock lock(*s);
//   s->Sweep(lock, /*full=*/false);
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "device_spec.h"
#include "driver_link.h"
#include "state_layout.h"

namespace simgpu {

class SharedState {
 public:
  // Holds the state mutex for its lifetime; repairs the totals when the previous holder died.
  // With a driver daemon, first reconnects a forked child (DriverLink::Refresh).
  class Lock {
   public:
    explicit Lock(SharedState& state);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    SharedState& state_;
  };

  // The process-wide state, opened (and created if the directory has none) on first use, and
  // connected to the directory's driver daemon when it has a socket. Fails when SIMGPU_DEVICES is
  // malformed, when SIMGPU_DEVICES is set and differs from the machine the existing state
  // simulates, when the file has another layout, or when the daemon's socket exists but nothing
  // answers on it. The result is remembered until Forget(). The returned object lives until the
  // process exits.
  static tessera::Result<SharedState*> Attach();

  // The state of SIMGPU_STATE for SIMGPU_DEVICES as Attach() opens it, but a new object each call
  // and never connected to a daemon (the daemon itself, tools). The caller owns the result.
  static tessera::Result<SharedState*> OpenFromEnvironment();

  // Makes the next Attach() read the environment again (a forked child's fresh driver). The old
  // object is kept: the parent's objects, copied into the child, may still point into it.
  static void Forget();

  // Frees the remembered state, and makes the next Attach() read the environment again (NVML's
  // last nvmlShutdown: no pointer from Attach() may be used after it).
  static void Detach();

  ~SharedState();

  // Opens (creating if needed) the state in `directory` for `spec`; `spec_given` says whether the
  // caller insists on that spec (otherwise an existing state is used whatever it simulates).
  static tessera::Result<SharedState*> Open(const std::string& directory, const DeviceSpec& spec,
                                            bool spec_given);

  // SIMGPU_STATE, or /dev/shm/simgpu-<uid>.
  static std::string DefaultDirectory();

  StateFile& file() { return *file_; }
  const std::string& directory() const { return directory_; }
  int device_count() const { return static_cast<int>(file_->device_count); }

  // A slot's process is alive while its liveness lock is held (state_layout.h); a slot without
  // the lock while its PID runs.
  enum class SweepMode {
    kRateLimited,  // every slot, at most once a millisecond (allocation paths)
    kQuick,        // every slot, now
    kFull,         // also compares unlocked slots' start times (PID reuse), zombies dead
  };
  // Frees the memory of processes that have exited. Does nothing when connected to a daemon.
  void Sweep(const Lock& lock, SweepMode mode);

  // Frees everything this process holds and gives up its slot (at exit).
  void ReleaseSelf(const Lock& lock);

  // Frees everything the process `pid` that started at `start_time` holds and gives up its slot
  // (the daemon, when the process's connections have closed). Returns the bytes freed.
  uint64_t ReleaseProcess(const Lock& lock, int pid, uint64_t start_time);

  // This process's PID in the state: the host PID from the daemon, or getpid(). 0 when the
  // daemon could not be reached again after a fork.
  int SelfPid(const Lock& lock) const;

  // Whether `pid` still runs: it holds a slot (with a daemon, which frees the slots of the dead),
  // or kill(pid, 0) finds it.
  bool PidAlive(const Lock& lock, int pid) const;

  // This process's slot, added when missing. nullptr when all slots are taken.
  ProcessSlot* Self(const Lock& lock);

  // Charges `bytes` of device `dev` to this process. Returns false (charging nothing) when the
  // device does not have them free, after a full sweep.
  bool Charge(const Lock& lock, int dev, uint64_t bytes);
  void Uncharge(const Lock& lock, int dev, uint64_t bytes);

  // Counts `bytes` of host memory this process holds mapped for device `dev` (pinned host memory,
  // host-located VMM memory; ProcessSlot::host_bytes): no device memory. False when the process
  // has no slot (all taken).
  bool ChargeHost(const Lock& lock, int dev, uint64_t bytes);
  void UnchargeHost(const Lock& lock, int dev, uint64_t bytes);

  // Shared VMM memory (StateFile::vmm_shares). ShareVmm makes this process's allocation shared
  // (`what`: its device, size, location, and the device bytes already charged to this process, 0
  // for a host location), with one reference of this process; returns its id, 0 when the table is
  // full. HoldVmm adds a reference of this process to share `id` and copies it to *out (false when
  // the share is gone); DropVmm removes one, and with this process's last, its charge (the device
  // keeps counting the memory while others hold it) and, with everyone's last, the memory.
  uint64_t ShareVmm(const Lock& lock, const VmmShare& what);
  bool HoldVmm(const Lock& lock, uint64_t id, VmmShare* out);
  void DropVmm(const Lock& lock, uint64_t id);

  // This process's CUDA device on physical device `dev` is MIG device (gi, ci)
  // (CUDA_VISIBLE_DEVICES named it): from now on its memory there is that GPU instance's, and
  // Charge refuses what does not fit in the GPU instance or once the MIG device is gone
  // (mig_state.h).
  void UseMigDevice(int dev, int gi, int ci);

  // Counts a context of this process on `dev` (delta +1 or -1) for NVML's process list.
  void CountContext(const Lock& lock, int dev, int delta);

  // Appends an Xid event for device `dev` (also used when a device is removed).
  void PostXid(const Lock& lock, int dev, uint32_t xid);

  // Number of Xid events ever posted (read without the lock).
  uint64_t XidSequence() const;

 private:
  SharedState(std::string directory, StateFile* file, int fd)
      : directory_(std::move(directory)), file_(file), fd_(fd) {}
  void Repair();
  uint64_t FreeSlot(ProcessSlot& slot);
  // Removes slot `index`'s references to shared VMM memory (its process is gone); `slot_freed`:
  // its used_bytes already left the devices' totals.
  void DropVmmHolder(int index, bool slot_freed);
  // Settles a share once a holder left: orphaned or freed as above.
  void SettleVmm(VmmShare& share);
  // Whether slot `p` (taken) belongs to a live process; `full` checks its start time too.
  bool SlotAlive(const ProcessSlot& p, bool full) const;
  // fcntl(F_OFD_SETLK or F_OFD_GETLK) with a lock of `type` on slot `index`'s liveness byte.
  int LivenessLock(int command, int index, short type, struct flock* fl) const;

  const std::string directory_;
  StateFile* const file_;
  int fd_;  // the state file, open for the process's life: its slot's liveness lock lives on it
  int locked_slot_ = -1;  // the slot whose liveness lock fd_ holds (F_OFD_GETLK cannot see it)
  std::unique_ptr<DriverLink> link_;        // set by Attach() when the directory has a daemon
  uint32_t mig_binding_[kMaxDevices] = {};  // UseMigDevice's, as ProcessSlot::mig_instance
};

// Clock ticks since boot at which process `pid` started (field 22 of /proc/<pid>/stat); 0 when the
// process does not exist.
uint64_t ProcessStartTime(int pid);

// Whether `pid` still runs and is the process that started at `start_time` (0: check only that the
// PID exists). With a start time, a zombie counts as dead (its files are closed).
bool ProcessAlive(int pid, uint64_t start_time);

}  // namespace simgpu
