// Multicast objects' teams (StateFile::multicasts), for cuMemMap and the import of a shared
// handle. Needs Driver::mu unless said otherwise.
#pragma once

#include "driver_state.h"

namespace simgpu {

// Whether shared allocation `id` is a multicast object.
bool IsMulticast(Driver& d, uint64_t id);

// Blocks until every device of `handle`'s multicast team has been added (at once for any other
// handle), as the driver's cuMemMap and binds do. Call without mu.
void WaitForMulticastTeam(Driver& d, CUmemGenericAllocationHandle handle);

}  // namespace simgpu
