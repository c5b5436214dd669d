#include "ipc_ops.h"

#include <cstring>

namespace simgpu {

namespace {

constexpr uint64_t kHandleMagic = 0x314d43504947534dull;  // "MSGIPCM1"

bool Live(const StateFile& f, const IpcExport& e) {
  if (e.kind == IpcKind::kFree || e.owner_slot < 0 || e.owner_slot >= kMaxProcesses) return false;
  const ProcessSlot& owner = f.processes[e.owner_slot];
  return owner.pid == e.owner_pid && owner.start_time == e.owner_start;
}

}  // namespace

uint64_t IpcExportNew(Driver& d, IpcKind kind, int device, uint64_t bytes) {
  SharedState::Lock lock(*d.state);
  ProcessSlot* self = d.state->Self(lock);
  if (self == nullptr) return 0;
  StateFile& f = d.state->file();
  for (IpcExport& e : f.ipc_exports) {
    if (Live(f, e)) continue;
    e = IpcExport{};
    e.id = ++f.next_ipc_id;
    e.kind = kind;
    e.owner_slot = static_cast<int32_t>(self - f.processes);
    e.owner_pid = self->pid;
    e.owner_start = self->start_time;
    e.device = static_cast<uint32_t>(device);
    e.bytes = bytes;
    return e.id;
  }
  return 0;
}

IpcExport* IpcExportFind(SharedState& state, const SharedState::Lock&, uint64_t id, IpcKind kind) {
  StateFile& f = state.file();
  for (IpcExport& e : f.ipc_exports) {
    if (e.id == id && e.kind == kind && Live(f, e)) return &e;
  }
  return nullptr;
}

bool IpcExportIsOwn(SharedState& state, const SharedState::Lock& lock, const IpcExport& e) {
  const ProcessSlot* self = state.Self(lock);
  return self != nullptr && self - state.file().processes == e.owner_slot;
}

void IpcExportDrop(Driver& d, uint64_t id) {
  SharedState::Lock lock(*d.state);
  for (IpcExport& e : d.state->file().ipc_exports) {
    if (e.id == id) e = IpcExport{};
  }
}

void IpcHandleEncode(const IpcHandleBytes& h, char out[CU_IPC_HANDLE_SIZE]) {
  std::memset(out, 0, CU_IPC_HANDLE_SIZE);
  IpcHandleBytes stamped = h;
  stamped.magic = kHandleMagic;
  std::memcpy(out, &stamped, sizeof(stamped));
}

bool IpcHandleDecode(const char in[CU_IPC_HANDLE_SIZE], IpcKind kind, IpcHandleBytes* out) {
  std::memcpy(out, in, sizeof(*out));
  return out->magic == kHandleMagic && out->kind == kind && out->id != 0;
}

void IpcEventPublish(Driver& d, Event* ev) {
  if (ev->ipc_id == 0) return;
  SharedState::Lock lock(*d.state);
  IpcExport* e = IpcExportFind(*d.state, lock, ev->ipc_id, IpcKind::kEvent);
  if (e == nullptr) return;
  // A record behind a kernel that waits for a signal (test kernels only) publishes no kernel.
  e->last_seq = ev->blocked != nullptr ? 0 : ev->work.seq;
}

void IpcEventRefresh(Driver& d, Event* ev) {
  if (ev->ipc_id == 0) return;
  SharedState::Lock lock(*d.state);
  const IpcExport* e = IpcExportFind(*d.state, lock, ev->ipc_id, IpcKind::kEvent);
  if (e == nullptr) return;  // the exporter is gone: the last record seen stays
  KernelRef work{static_cast<int>(e->device), e->last_seq};
  if (ev->recorded && ev->blocked == nullptr && ev->work.seq == work.seq) return;
  ev->recorded = true;
  ev->work = work.seq == 0 ? KernelRef{} : work;
  ev->blocked = nullptr;
  ev->time_ns = 0;
  ev->time_lost = false;
}

const IpcOpening* IpcOpeningAt(const Driver& d, uint64_t ptr, uint64_t bytes) {
  auto it = d.ipc_openings.upper_bound(ptr);
  if (it == d.ipc_openings.begin()) return nullptr;
  --it;
  if (ptr + bytes < ptr || ptr + bytes > it->first + it->second.size) return nullptr;
  return &it->second;
}

void IpcCloseContext(Driver& d, Context* ctx) {
  for (auto it = d.ipc_openings.begin(); it != d.ipc_openings.end();) {
    if (it->second.ctx != ctx) {
      ++it;
      continue;
    }
    d.address_space.Free(it->first, it->second.reserved);
    it = d.ipc_openings.erase(it);
  }
}

}  // namespace simgpu
