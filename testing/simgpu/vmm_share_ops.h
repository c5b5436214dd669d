// What other parts of the driver need of VMM sharing (cuda_vmm_share.cc): the share a descriptor
// exported by cuMemExportToShareableHandle names.
#pragma once

#include <cstdint>

namespace simgpu {

// The id of the VMM share (StateFile::vmm_shares) that descriptor `fd` names; false when `fd` is
// not a descriptor this driver exported.
bool SharedVmmIdOf(int fd, uint64_t* id);

}  // namespace simgpu
