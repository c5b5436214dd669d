// Interprocess handles (cuIpc*): the exports other processes open, kept in the state file
// (StateFile::ipc_exports), and what a handle's 64 bytes hold. Needs Driver::mu.
//
// A handle carries a magic, the export's id and the device; the id finds the entry, which is
// stale once its exporter is gone (state_layout.h IpcExport). Events: a record of an exported or
// opened event stores the kernel it waits for in the entry, and every query, synchronisation or
// wait on either side reads it from there first, so all processes see the last record.
#pragma once

#include <cstdint>

#include "driver_state.h"

namespace simgpu {

// What a handle holds. `kind` tells a memory handle from an event handle.
struct IpcHandleBytes {
  uint64_t magic;
  uint64_t id;
  IpcKind kind;
  uint32_t device;
  uint64_t bytes;
};
static_assert(sizeof(IpcHandleBytes) <= CU_IPC_HANDLE_SIZE);

// Exports `kind` on `device` as this process's (an allocation of `bytes`); 0 when the state's
// table is full.
uint64_t IpcExportNew(Driver& d, IpcKind kind, int device, uint64_t bytes);

// The live export `id` of `kind`, or nullptr (never exported, or its exporter has let it go).
// Needs the state lock.
IpcExport* IpcExportFind(SharedState& state, const SharedState::Lock& lock, uint64_t id,
                         IpcKind kind);

// Whether export `e` is this process's own.
bool IpcExportIsOwn(SharedState& state, const SharedState::Lock& lock, const IpcExport& e);

// The exporter let export `id` go (the allocation freed, the event destroyed).
void IpcExportDrop(Driver& d, uint64_t id);

// Writes and reads handles. Decode returns false for bytes no simgpu handle of `kind` has.
void IpcHandleEncode(const IpcHandleBytes& h, char out[CU_IPC_HANDLE_SIZE]);
bool IpcHandleDecode(const char in[CU_IPC_HANDLE_SIZE], IpcKind kind, IpcHandleBytes* out);

// Events: a record of `ev` (exported or opened) is published; before a query, synchronisation or
// wait, `ev` takes the last record published by any process.
void IpcEventPublish(Driver& d, Event* ev);
void IpcEventRefresh(Driver& d, Event* ev);

// An opened range containing [ptr, ptr + bytes), or nullptr.
const IpcOpening* IpcOpeningAt(const Driver& d, uint64_t ptr, uint64_t bytes);

// Frees this process's openings made in `ctx` (the context is being destroyed).
void IpcCloseContext(Driver& d, Context* ctx);

}  // namespace simgpu
