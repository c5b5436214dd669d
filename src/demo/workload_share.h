// tessera-demo-workload --share: two containers of one pod share GPU memory the two ways
// frameworks do, through a directory they both mount (workload_share.cc). Single-threaded.
#pragma once

#include <string>

namespace tessera::workload {

// `role` "export": allocates a buffer and exports it by IPC handle (a file in `dir`), creates VMM
// memory and hands it over as a file descriptor on a Unix socket in `dir`, then waits for the
// importer. `role` "import": opens both, writes through them, and reports what its container was
// charged. Prints key=value findings (share.*); returns the exit status (0: every call worked).
int Share(const std::string& role, const std::string& dir);

}  // namespace tessera::workload
