// Host pages the simulated driver pins: the memory of cuMemHostAlloc/cuMemAllocHost and of
// host-located cuMemCreate handles. A real driver pins such memory as it allocates it, so the host
// and the process's memory cgroup see every byte at once; simgpu makes the pages resident (it
// writes them in), which charges them the same way. Where the host or the cgroup cannot give them,
// the allocation fails and says so to its caller (CUDA_ERROR_OUT_OF_MEMORY), rather than letting
// the kernel's out-of-memory killer end a process while the pages are faulted in: the headroom is
// checked first.
//
// The pages are not mlock'ed (RLIMIT_MEMLOCK, 8 MiB for unprivileged users, would refuse what a
// real driver pins from the kernel); without swap, which Kubernetes nodes run without, resident
// anonymous pages stay put.
//
// Thread-safe: no state.
#pragma once

#include <cstdint>

namespace simgpu {

// Bytes the process can still make resident: the smaller of the host's MemAvailable and, for the
// process's memory cgroup and each ancestor visible under /sys/fs/cgroup (v2, or v1's memory
// controller), its limit minus its usage less inactive file pages (which the kernel reclaims
// first, as kubelet's working set leaves them out). UINT64_MAX when nothing limits or can be read.
uint64_t HostMemoryHeadroom();

// `bytes` rounded up to whole pages of private anonymous memory, every page resident. nullptr when
// the headroom is short or the kernel refuses the mapping or its pages.
void* AllocPinnedPages(uint64_t bytes);

// Unmaps what AllocPinnedPages gave (`bytes` as given to it).
void FreePinnedPages(void* p, uint64_t bytes);

// What pinning a range of the program's own memory (cuMemHostRegister) came to.
enum class PinOutcome {
  kPinned,    // every page of the range is resident
  kShort,     // the pages not yet resident do not fit the headroom, or the kernel refused them
  kBadRange,  // part of the range is not mapped, or not writable when `read_only` is false
};

// Makes every page of [p, p + bytes) resident, as a real driver's registration pins them: the
// pages not resident yet are checked against the headroom, then faulted in (for writing, unless
// `read_only`) without changing their contents.
PinOutcome PinRange(void* p, uint64_t bytes, bool read_only);

// Makes bytes [offset, offset + size) of the memfd `fd` resident (fallocate), after the same
// headroom check. False when the memory is short.
bool PopulateMemfd(int fd, uint64_t offset, uint64_t size);

// The size of a page.
uint64_t PageBytes();

}  // namespace simgpu
