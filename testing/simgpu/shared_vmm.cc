// SharedState's shared VMM memory: who holds an exported allocation, and who is charged for it
// (state_layout.h VmmShare).
#include "shared_state.h"

namespace simgpu {

namespace {

VmmShare* FindShare(StateFile& f, uint64_t id) {
  for (VmmShare& s : f.vmm_shares) {
    if (id != 0 && s.id == id) return &s;
  }
  return nullptr;
}

VmmHolder* FindHolder(VmmShare& s, int slot) {
  for (VmmHolder& h : s.holders) {
    if (h.slot == slot) return &h;
  }
  return nullptr;
}

bool HolderLive(const StateFile& f, const VmmHolder& h) {
  if (h.slot < 0) return false;
  const ProcessSlot& p = f.processes[h.slot];
  return p.pid == h.pid && p.start_time == h.start;
}

}  // namespace

uint64_t SharedState::ShareVmm(const Lock& lock, const VmmShare& what) {
  ProcessSlot* self = Self(lock);
  if (self == nullptr) return 0;
  StateFile& f = *file_;
  for (VmmShare& s : f.vmm_shares) {
    if (s.id != 0) continue;
    s = what;
    s.id = ++f.next_ipc_id;
    s.orphaned = 0;
    int slot = static_cast<int>(self - f.processes);
    s.charged_slot = s.bytes > 0 ? slot : -1;
    for (VmmHolder& h : s.holders) h.slot = -1;
    s.holders[0] = VmmHolder{slot, self->pid, self->start_time, 1};
    return s.id;
  }
  return 0;
}

bool SharedState::HoldVmm(const Lock& lock, uint64_t id, VmmShare* out) {
  VmmShare* s = FindShare(*file_, id);
  ProcessSlot* self = Self(lock);
  if (s == nullptr || self == nullptr) return false;
  SettleVmm(*s);
  if (s->id == 0) return false;
  int slot = static_cast<int>(self - file_->processes);
  VmmHolder* h = FindHolder(*s, slot);
  if (h == nullptr) h = FindHolder(*s, -1);
  if (h == nullptr) return false;  // too many processes hold it
  if (h->slot < 0) *h = VmmHolder{slot, self->pid, self->start_time, 0};
  ++h->refs;
  *out = *s;
  return true;
}

void SharedState::DropVmm(const Lock& lock, uint64_t id) {
  VmmShare* s = FindShare(*file_, id);
  ProcessSlot* self = Self(lock);
  if (s == nullptr || self == nullptr) return;
  int slot = static_cast<int>(self - file_->processes);
  VmmHolder* h = FindHolder(*s, slot);
  if (h == nullptr || --h->refs > 0) return;
  h->slot = -1;
  if (s->charged_slot == slot) {
    // This process stops paying for it; the device keeps counting it for the holders left.
    uint64_t& mine = self->used_bytes[s->device];
    mine -= std::min(mine, s->bytes);
    s->charged_slot = -1;
    s->orphaned = 1;
  }
  SettleVmm(*s);
}

void SharedState::DropVmmHolder(int index, bool slot_freed) {
  for (VmmShare& s : file_->vmm_shares) {
    if (s.id == 0) continue;
    VmmHolder* h = FindHolder(s, index);
    if (h != nullptr) h->slot = -1;
    if (s.charged_slot == index) {
      s.charged_slot = -1;
      if (slot_freed) {
        // Its used_bytes left the device's total; the memory is still there for the others.
        file_->devices[s.device].used_bytes += s.bytes;
      } else {
        uint64_t& mine = file_->processes[index].used_bytes[s.device];
        mine -= std::min(mine, s.bytes);
      }
      s.orphaned = 1;
    }
    SettleVmm(s);
  }
}

void SharedState::SettleVmm(VmmShare& share) {
  bool held = false;
  for (VmmHolder& h : share.holders) {
    if (h.slot >= 0 && !HolderLive(*file_, h)) h.slot = -1;  // a process whose slot was reused
    held = held || h.slot >= 0;
  }
  if (held) return;
  if (share.orphaned) {
    DeviceState& dev = file_->devices[share.device];
    dev.used_bytes -= std::min(dev.used_bytes, share.bytes);
  } else if (share.charged_slot >= 0) {
    // Its creator is charged but no longer listed as holding it (its slot was reused).
    uint64_t& mine = file_->processes[share.charged_slot].used_bytes[share.device];
    uint64_t freed = std::min(mine, share.bytes);
    mine -= freed;
    file_->devices[share.device].used_bytes -=
        std::min(file_->devices[share.device].used_bytes, freed);
  }
  for (Multicast& m : file_->multicasts) {
    if (m.id == share.id) m = Multicast{};  // a multicast object goes with its last handle
  }
  share = VmmShare{};
}

}  // namespace simgpu
