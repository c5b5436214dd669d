#include "shared_state.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "clock.h"
#include "mig_state.h"
#include "timeline.h"

namespace simgpu {
namespace {

uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // splitmix64 finaliser: spreads small input differences over all bits.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

void InitDevice(DeviceState& dev, const DeviceModel& model, int index, const std::string& seed) {
  snprintf(dev.model, sizeof(dev.model), "%s", model.model.c_str());
  uint64_t a = Fnv1a(seed + "#" + std::to_string(index));
  uint64_t b = Fnv1a(std::to_string(index) + "#" + seed);
  snprintf(dev.uuid, sizeof(dev.uuid), "GPU-%08x-%04x-%04x-%04x-%012llx",
           static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
           static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
           static_cast<unsigned long long>(b & 0xffffffffffffull));
  dev.pci_bus = 0x10 + 8 * static_cast<uint32_t>(index);
  snprintf(dev.pci_bus_id, sizeof(dev.pci_bus_id), "00000000:%02X:00.0", dev.pci_bus);
  dev.memory_total = model.memory_bytes;
  dev.sms = model.sms;
}

tessera::Status MakeDirectories(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return tessera::ErrnoStatus("create state directory", prefix, errno);
    }
  }
  return tessera::Status::Ok();
}

// Writes a complete state file under a temporary name and links it into place, so no process ever
// sees a half-initialised file. Returns OK also when another process won the race.
tessera::Status CreateStateFile(const std::string& directory, const std::string& path,
                                const DeviceSpec& spec) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return tessera::ErrnoStatus("create state file", tmp, errno);
  fchmod(fd, 0666);  // shared by every user of the directory, whatever the umask
  if (ftruncate(fd, sizeof(StateFile)) != 0) {
    int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return tessera::ErrnoStatus("size state file", tmp, err);
  }
  void* map = mmap(nullptr, sizeof(StateFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    unlink(tmp.c_str());
    return tessera::ErrnoStatus("map state file", tmp, errno);
  }
  auto* f = static_cast<StateFile*>(map);
  f->layout_version = kLayoutVersion;
  f->device_count = static_cast<uint32_t>(spec.devices.size());
  f->file_size = sizeof(StateFile);
  f->ctx_memory = spec.ctx_memory_bytes;
  f->pcie_peers = spec.peers.pcie ? 1 : 0;
  f->realtime_offset_us = static_cast<int64_t>(RealtimeUs()) - static_cast<int64_t>(NowNs() / 1000);
  std::string canonical = spec.Canonical();
  snprintf(f->spec, sizeof(f->spec), "%s", canonical.c_str());
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&f->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    InitDevice(f->devices[i], spec.devices[i], static_cast<int>(i), directory + "|" + canonical);
    InitTimeline(f->devices[i], spec.sched, spec.timeslice_ns);
    DeviceState& d = f->devices[i];
    const Imperfections& m = spec.imperfections;
    d.jitter_percent = m.jitter_percent;
    d.drift_percent = m.drift_percent;
    d.drift_period_ns = m.drift_period_ns;
    d.nvml_period_ns = m.nvml_period_ns;
    d.switch_ns = m.switch_ns;
    d.nvml_mode = static_cast<uint32_t>(m.nvml_mode);
    d.streams_concurrent = m.streams_concurrent ? 1 : 0;
    d.events_on_device = m.events_on_device ? 1 : 0;
    d.host_slowdown = spec.host_slowdown;
    d.nvlink_group = spec.peers.GroupOf(static_cast<int>(i), static_cast<int>(spec.devices.size()));
  }
  f->magic = kStateMagic;
  munmap(map, sizeof(StateFile));
  int rc = link(tmp.c_str(), path.c_str());
  int err = errno;
  unlink(tmp.c_str());
  if (rc != 0 && err != EEXIST) return tessera::ErrnoStatus("publish state file", path, err);
  return tessera::Status::Ok();
}

}  // namespace

namespace {

// Field 3 (the state letter) and field 22 (the start time, clock ticks since boot) of
// /proc/<pid>/stat; false when it cannot be read.
bool ReadProcStat(int pid, char* state, uint64_t* start_time) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ') return false;
  *state = p[2];
  int field = 2;
  for (; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  *start_time = strtoull(p, nullptr, 10);
  return true;
}

}  // namespace

uint64_t ProcessStartTime(int pid) {
  char state = 0;
  uint64_t start = 0;
  return ReadProcStat(pid, &state, &start) ? start : 0;
}

bool ProcessAlive(int pid, uint64_t start_time) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (start_time == 0) return true;
  char state = 0;
  uint64_t now_start = 0;
  if (!ReadProcStat(pid, &state, &now_start)) return true;
  // A zombie has closed its files: a real driver freed its memory when its device files closed,
  // before its parent reaps it.
  if (state == 'Z' || state == 'X') return false;
  return now_start == 0 || now_start == start_time;
}

std::string SharedState::DefaultDirectory() {
  const char* dir = getenv("SIMGPU_STATE");
  if (dir != nullptr && dir[0] != '\0') return dir;
  return "/dev/shm/simgpu-" + std::to_string(getuid());
}

namespace {
std::mutex g_attach_mu;
SharedState* g_attached = nullptr;          // guarded by g_attach_mu
tessera::Status* g_attach_error = nullptr;  // guarded by g_attach_mu
}  // namespace

tessera::Result<SharedState*> SharedState::OpenFromEnvironment() {
  const char* text = getenv("SIMGPU_DEVICES");
  bool given = text != nullptr && text[0] != '\0';
  tessera::Result<DeviceSpec> spec = ParseDeviceSpec(given ? text : "");
  if (!spec.ok()) return spec.status();
  return Open(DefaultDirectory(), *spec, given);
}

tessera::Result<SharedState*> SharedState::Attach() {
  std::lock_guard<std::mutex> guard(g_attach_mu);
  if (g_attached != nullptr) return g_attached;
  if (g_attach_error != nullptr) return *g_attach_error;
  tessera::Result<SharedState*> opened = OpenFromEnvironment();
  if (opened.ok()) {
    // As with a real driver, whose kernel module is either loaded or not: a socket that does not
    // answer fails the process instead of falling back to PIDs that may mean nothing here.
    std::string socket_path = (*opened)->directory() + "/" + kDriverSocketName;
    struct stat st;
    if (lstat(socket_path.c_str(), &st) == 0 || errno != ENOENT) {
      tessera::Result<std::unique_ptr<DriverLink>> link = DriverLink::Connect(socket_path);
      if (link.ok()) {
        (*opened)->link_ = std::move(*link);
      } else {
        delete *opened;
        opened = link.status();
      }
    }
  }
  if (!opened.ok()) {
    g_attach_error = new tessera::Status(opened.status());
    return opened.status();
  }
  g_attached = *opened;
  return g_attached;
}

void SharedState::Detach() {
  std::lock_guard<std::mutex> guard(g_attach_mu);
  delete g_attached;
  g_attached = nullptr;
  delete g_attach_error;
  g_attach_error = nullptr;
}

SharedState::~SharedState() {
  munmap(file_, sizeof(StateFile));
  if (fd_ >= 0) close(fd_);
}

void SharedState::Forget() {
  // Called in a child right after fork(): no other thread exists, so the mutex is re-created.
  new (&g_attach_mu) std::mutex();
  if (g_attached != nullptr && g_attached->link_ != nullptr) {
    g_attached->link_->CloseInForkedChild();  // the parent's connection is the parent's
  }
  if (g_attached != nullptr && g_attached->fd_ >= 0) {
    g_attached->locked_slot_ = -1;
    // The inherited descriptor shares the parent's open file description and so its liveness
    // lock: kept, it would make the parent look alive for as long as the child lives.
    close(g_attached->fd_);
    g_attached->fd_ = -1;
  }
  g_attached = nullptr;  // the old mapping stays: the parent's objects may still point into it
  g_attach_error = nullptr;
}

tessera::Result<SharedState*> SharedState::Open(const std::string& directory,
                                                const DeviceSpec& spec, bool spec_given) {
  RETURN_IF_ERROR(MakeDirectories(directory));
  std::string path = directory + "/state";
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    RETURN_IF_ERROR(CreateStateFile(directory, path, spec));
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) return tessera::ErrnoStatus("open state file", path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != sizeof(StateFile)) {
    close(fd);
    return tessera::FailedPrecondition(
        "simgpu state file " + path + " has another size than this simgpu's layout (version " +
        std::to_string(kLayoutVersion) + "); run `simgpu reset` (or remove the directory)");
  }
  void* map = mmap(nullptr, sizeof(StateFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    int err = errno;
    close(fd);
    return tessera::ErrnoStatus("map state file", path, err);
  }
  auto* f = static_cast<StateFile*>(map);
  if (f->magic != kStateMagic || f->layout_version != kLayoutVersion ||
      f->file_size != sizeof(StateFile)) {
    munmap(map, sizeof(StateFile));
    close(fd);
    return tessera::FailedPrecondition("simgpu state file " + path +
                                       " is not a state file of layout version " +
                                       std::to_string(kLayoutVersion) + "; run `simgpu reset`");
  }
  if (spec_given && spec.Canonical() != std::string(f->spec, strnlen(f->spec, sizeof(f->spec)))) {
    std::string existing(f->spec, strnlen(f->spec, sizeof(f->spec)));
    munmap(map, sizeof(StateFile));
    close(fd);
    return tessera::FailedPrecondition(
        "simgpu state in " + directory + " simulates '" + existing +
        "' but SIMGPU_DEVICES asks for '" + spec.Canonical() +
        "'; use another SIMGPU_STATE directory or run `simgpu reset` first");
  }
  return new SharedState(directory, f, fd);
}

SharedState::Lock::Lock(SharedState& state) : state_(state) {
  if (state_.link_ != nullptr) state_.link_->Refresh();
  int rc = pthread_mutex_lock(&state_.file_->mutex);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&state_.file_->mutex);
    state_.Repair();
  }
}

SharedState::Lock::~Lock() {
  pthread_mutex_unlock(&state_.file_->mutex);
}

void SharedState::Repair() {
  // The previous holder died mid-update: rebuild the memory totals from the process slots.
  for (uint32_t d = 0; d < file_->device_count; ++d) {
    uint64_t used = 0;
    for (const ProcessSlot& p : file_->processes) {
      if (p.pid != 0) used += p.used_bytes[d];
    }
    for (const VmmShare& s : file_->vmm_shares) {
      if (s.id != 0 && s.orphaned && s.device == d) used += s.bytes;  // held, charged to nobody
    }
    DeviceState& dev = file_->devices[d];
    dev.used_bytes = used;
    if (dev.peak_used_bytes < used) dev.peak_used_bytes = used;
    if (dev.segment_count > kSegmentCapacity) dev.segment_count = 0;
    if (dev.segment_head >= kSegmentCapacity) dev.segment_head = 0;
  }
}

void SharedState::Sweep(const Lock&, SweepMode mode) {
  if (link_ != nullptr) return;  // the daemon frees dead processes; host PIDs are not ours to check
  uint64_t now = NowNs();
  if (mode == SweepMode::kRateLimited && now - file_->last_sweep_ns < 1'000'000) return;
  file_->last_sweep_ns = now;
  bool full = mode == SweepMode::kFull;
  uint32_t end = std::min<uint32_t>(file_->process_slots_end, kMaxProcesses);
  for (uint32_t i = 0; i < end; ++i) {
    ProcessSlot& p = file_->processes[i];
    if (p.pid != 0 && !SlotAlive(p, full)) FreeSlot(p);
  }
}

int SharedState::LivenessLock(int command, int index, short type, struct flock* fl) const {
  *fl = {};
  fl->l_type = type;
  fl->l_whence = SEEK_SET;
  fl->l_start = static_cast<off_t>(kLivenessOffset + static_cast<uint64_t>(index));
  fl->l_len = 1;
  return fcntl(fd_, command, fl);
}

bool SharedState::SlotAlive(const ProcessSlot& p, bool full) const {
  if (!(p.flags & kSlotLivenessLock) || fd_ < 0)
    return ProcessAlive(p.pid, full ? p.start_time : 0);
  int index = static_cast<int>(&p - file_->processes);
  if (index == locked_slot_) return true;
  struct flock fl;
  if (LivenessLock(F_OFD_GETLK, index, F_WRLCK, &fl) != 0) return true;
  return fl.l_type != F_UNLCK;
}

uint64_t SharedState::FreeSlot(ProcessSlot& slot) {
  uint64_t freed = 0;
  for (uint32_t d = 0; d < file_->device_count; ++d) {
    DeviceState& dev = file_->devices[d];
    uint64_t bytes = std::min(dev.used_bytes, slot.used_bytes[d]);
    dev.used_bytes -= bytes;
    freed += bytes;
  }
  DropVmmHolder(static_cast<int>(&slot - file_->processes), /*slot_freed=*/true);
  slot = ProcessSlot{};
  return freed;
}

void SharedState::ReleaseSelf(const Lock& lock) {
  ProcessSlot* self = Self(lock);
  if (self == nullptr) return;
  int index = static_cast<int>(self - file_->processes);
  FreeSlot(*self);
  if (index == locked_slot_) {
    struct flock fl;
    LivenessLock(F_OFD_SETLK, index, F_UNLCK, &fl);
    locked_slot_ = -1;
  }
}

uint64_t SharedState::ReleaseProcess(const Lock&, int pid, uint64_t start_time) {
  uint64_t freed = 0;
  uint32_t end = std::min<uint32_t>(file_->process_slots_end, kMaxProcesses);
  for (uint32_t i = 0; i < end; ++i) {
    ProcessSlot& p = file_->processes[i];
    if (p.pid == pid && p.start_time == start_time) freed += FreeSlot(p);
  }
  return freed;
}

int SharedState::SelfPid(const Lock&) const {
  return link_ != nullptr ? link_->identity().pid : getpid();
}

bool SharedState::PidAlive(const Lock&, int pid) const {
  if (link_ == nullptr) return ProcessAlive(pid, 0);
  uint32_t end = std::min<uint32_t>(file_->process_slots_end, kMaxProcesses);
  for (uint32_t i = 0; i < end; ++i) {
    if (file_->processes[i].pid == pid) return true;
  }
  return false;
}

ProcessSlot* SharedState::Self(const Lock& lock) {
  // Guarded by the state mutex, which also excludes this process's other threads.
  static int cached_pid = 0;
  static int cached_index = -1;
  int pid = SelfPid(lock);
  if (pid == 0) return nullptr;
  if (cached_pid == pid && file_->processes[cached_index].pid == pid) {
    return &file_->processes[cached_index];
  }
  uint64_t start = link_ != nullptr ? link_->identity().start_time : ProcessStartTime(pid);
  int free_index = -1;
  int end = std::min<int>(static_cast<int>(file_->process_slots_end) + 1, kMaxProcesses);
  for (int i = 0; i < end; ++i) {
    ProcessSlot& p = file_->processes[i];
    if (p.pid == pid && p.start_time == start) {
      free_index = i;
      break;
    }
    if (p.pid == pid) FreeSlot(p);  // a dead process that had our PID: nothing of it is left
    if (p.pid == 0 && free_index < 0) free_index = i;
  }
  if (free_index < 0) return nullptr;
  ProcessSlot& slot = file_->processes[free_index];
  if (static_cast<uint32_t>(free_index) >= file_->process_slots_end) {
    file_->process_slots_end = free_index + 1;
  }
  if (slot.pid != pid) {
    slot = ProcessSlot{};
    slot.pid = pid;
    slot.start_time = start;
    struct flock fl;
    if (fd_ >= 0 && locked_slot_ < 0 && LivenessLock(F_OFD_SETLK, free_index, F_WRLCK, &fl) == 0) {
      slot.flags = kSlotLivenessLock;
      locked_slot_ = free_index;
    }
  }
  cached_pid = pid;
  cached_index = free_index;
  return &slot;
}

bool SharedState::Charge(const Lock& lock, int dev, uint64_t bytes) {
  Sweep(lock, SweepMode::kRateLimited);
  DeviceState& d = file_->devices[dev];
  // A real driver frees a process's memory as it dies; here the memory of one that died since the
  // last sweep would still count. Before the device's peak rises, the dead are swept in full, so
  // that no peak counts a dead process's memory.
  if (d.used_bytes + bytes > d.peak_used_bytes) Sweep(lock, SweepMode::kFull);
  if (d.memory_total - d.used_bytes < bytes) {
    Sweep(lock, SweepMode::kFull);
    if (d.memory_total - d.used_bytes < bytes) return false;
  }
  if (uint32_t mig = mig_binding_[dev]; mig != 0) {
    int gi = MigSlotGi(mig);
    const MigGpuInstance& g = d.gpu_instances[gi];
    if (!d.mig_mode || !g.live || !g.cis[MigSlotCi(mig)].live) return false;  // destroyed
    uint64_t total = GpuInstanceTotal(d, gi);
    if (GpuInstanceUsed(*file_, dev, gi) + bytes > total) {
      Sweep(lock, SweepMode::kFull);
      if (GpuInstanceUsed(*file_, dev, gi) + bytes > total) return false;
    }
  }
  ProcessSlot* self = Self(lock);
  if (self == nullptr) return false;
  if (mig_binding_[dev] != 0) self->mig_instance[dev] = mig_binding_[dev];
  self->used_bytes[dev] += bytes;
  d.used_bytes += bytes;
  if (d.used_bytes > d.peak_used_bytes) d.peak_used_bytes = d.used_bytes;
  return true;
}

void SharedState::Uncharge(const Lock& lock, int dev, uint64_t bytes) {
  ProcessSlot* self = Self(lock);
  DeviceState& d = file_->devices[dev];
  if (self != nullptr) {
    uint64_t mine = std::min(self->used_bytes[dev], bytes);
    self->used_bytes[dev] -= mine;
    d.used_bytes -= std::min(d.used_bytes, mine);
  }
}

bool SharedState::ChargeHost(const Lock& lock, int dev, uint64_t bytes) {
  ProcessSlot* self = Self(lock);
  if (self == nullptr) return false;
  self->host_bytes[dev] += bytes;
  return true;
}

void SharedState::UnchargeHost(const Lock& lock, int dev, uint64_t bytes) {
  ProcessSlot* self = Self(lock);
  if (self != nullptr) self->host_bytes[dev] -= std::min(self->host_bytes[dev], bytes);
}

void SharedState::UseMigDevice(int dev, int gi, int ci) {
  mig_binding_[dev] = MigSlotValue(gi, ci);
}

void SharedState::CountContext(const Lock& lock, int dev, int delta) {
  ProcessSlot* self = Self(lock);
  if (self == nullptr) return;
  if (mig_binding_[dev] != 0) self->mig_instance[dev] = mig_binding_[dev];
  if (delta > 0) self->contexts[dev] += delta;
  if (delta < 0 && self->contexts[dev] > 0) --self->contexts[dev];
}

void SharedState::PostXid(const Lock&, int dev, uint32_t xid) {
  uint64_t seq = __atomic_load_n(&file_->xid_seq, __ATOMIC_RELAXED) + 1;
  file_->xids[seq % kXidCapacity] = XidEvent{seq, static_cast<uint32_t>(dev), xid, NowNs()};
  __atomic_store_n(&file_->xid_seq, seq, __ATOMIC_RELEASE);
}

uint64_t SharedState::XidSequence() const {
  return __atomic_load_n(&file_->xid_seq, __ATOMIC_ACQUIRE);
}

}  // namespace simgpu
