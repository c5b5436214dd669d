// Memory shared between the containers of one pod: a cuMemAlloc buffer by IPC handle (as vLLM and
// torch.multiprocessing share tensors) and a cuMemCreate allocation by POSIX file descriptor over
// a Unix socket (as NCCL shares its buffers). Each side reports what its own container was charged
// (cuMemGetInfo's used memory, the container's view under the library, before and after): the
// exporter the memory it made, the importer nothing for what it opened.
#include "workload_share.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "abi/cuda_driver.h"
#include "common/fd_passing.h"

namespace tessera::workload {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kIpcBytes = 256 * kMiB;
constexpr uint64_t kVmmBytes = 128 * kMiB;
constexpr int kWaitSeconds = 120;

bool Check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "workload: %s failed: CUresult %d\n", what, static_cast<int>(rc));
  return false;
}

// The container's used device memory as the program sees it (under the library: its charge).
uint64_t UsedMiB() {
  size_t free = 0, total = 0;
  if (cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return 0;
  return (total - free) / kMiB;
}

bool WaitFor(const std::string& path) {
  for (int i = 0; i < kWaitSeconds * 10; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "workload: %s did not appear\n", path.c_str());
  return false;
}

sockaddr_un Address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
  return a;
}

CUmemAllocationProp VmmProp() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

bool MapAll(CUmemGenericAllocationHandle h, uint64_t bytes, CUdeviceptr* va) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return Check(cuMemAddressReserve(va, bytes, 0, 0, 0), "cuMemAddressReserve") &&
         Check(cuMemMap(*va, bytes, 0, h, 0), "cuMemMap") &&
         Check(cuMemSetAccess(*va, bytes, &access, 1), "cuMemSetAccess");
}

int Export(const std::string& dir) {
  uint64_t before = UsedMiB();
  CUdeviceptr buffer = 0;
  CUipcMemHandle handle{};
  if (!Check(cuMemAlloc(&buffer, kIpcBytes), "cuMemAlloc") ||
      !Check(cuIpcGetMemHandle(&handle, buffer), "cuIpcGetMemHandle")) {
    return 1;
  }
  CUmemAllocationProp prop = VmmProp();
  CUmemGenericAllocationHandle vmm = 0;
  CUdeviceptr va = 0;
  if (!Check(cuMemCreate(&vmm, kVmmBytes, &prop, 0), "cuMemCreate") ||
      !MapAll(vmm, kVmmBytes, &va)) {
    return 1;
  }
  std::printf("share.exporter_charged_mib=%llu\n",
              static_cast<unsigned long long>(UsedMiB() - before));
  std::fflush(stdout);
  std::ofstream(dir + "/ipc.handle.tmp", std::ios::binary)
      .write(handle.reserved, sizeof(handle.reserved));
  std::filesystem::rename(dir + "/ipc.handle.tmp", dir + "/ipc.handle");
  int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address = Address(dir + "/vmm.sock");
  unlink(address.sun_path);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener, 1) != 0) {
    std::perror("workload: vmm.sock");
    return 1;
  }
  int peer = accept(listener, nullptr, nullptr);
  int fd = -1;
  if (peer < 0 ||
      !Check(cuMemExportToShareableHandle(&fd, vmm, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             "cuMemExportToShareableHandle") ||
      !tessera::SendFd(peer, fd)) {
    return 1;
  }
  close(fd);
  close(peer);
  close(listener);
  unlink(address.sun_path);
  if (!WaitFor(dir + "/imported")) return 1;  // the importer has used and measured them
  bool ok = Check(cuMemUnmap(va, kVmmBytes), "cuMemUnmap") &&
            Check(cuMemAddressFree(va, kVmmBytes), "cuMemAddressFree") &&
            Check(cuMemRelease(vmm), "cuMemRelease") && Check(cuMemFree(buffer), "cuMemFree");
  std::printf("share.exporter_done=%d\n", ok ? 1 : 0);
  return ok ? 0 : 1;
}

int Import(const std::string& dir) {
  if (!WaitFor(dir + "/ipc.handle") || !WaitFor(dir + "/vmm.sock")) return 1;
  uint64_t before = UsedMiB();
  CUipcMemHandle handle{};
  std::ifstream(dir + "/ipc.handle", std::ios::binary)
      .read(handle.reserved, sizeof(handle.reserved));
  CUdeviceptr opened = 0;
  if (!Check(cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
             "cuIpcOpenMemHandle") ||
      !Check(cuMemsetD8(opened, 1, kIpcBytes), "cuMemsetD8 (IPC)")) {
    return 1;
  }
  std::printf("share.ipc=ok\n");
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address = Address(dir + "/vmm.sock");
  int fd = -1;
  for (int i = 0; i < kWaitSeconds * 10; ++i) {
    if (connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  fd = tessera::ReceiveFd(sock);
  close(sock);
  CUmemGenericAllocationHandle vmm = 0;
  CUdeviceptr va = 0;
  if (fd < 0 ||
      !Check(
          cuMemImportFromShareableHandle(&vmm, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "cuMemImportFromShareableHandle") ||
      !MapAll(vmm, kVmmBytes, &va) || !Check(cuMemsetD8(va, 2, kVmmBytes), "cuMemsetD8 (VMM)")) {
    return 1;
  }
  close(fd);
  std::printf("share.vmm=ok\nshare.importer_charged_mib=%llu\n",
              static_cast<unsigned long long>(UsedMiB() - before));
  std::fflush(stdout);
  std::ofstream(dir + "/imported") << "1\n";
  bool ok = Check(cuMemUnmap(va, kVmmBytes), "cuMemUnmap") &&
            Check(cuMemAddressFree(va, kVmmBytes), "cuMemAddressFree") &&
            Check(cuMemRelease(vmm), "cuMemRelease") &&
            Check(cuIpcCloseMemHandle(opened), "cuIpcCloseMemHandle");
  return ok ? 0 : 1;
}

}  // namespace

int Share(const std::string& role, const std::string& dir) {
  if (role == "export") return Export(dir);
  if (role == "import") return Import(dir);
  std::fprintf(stderr, "workload: --share takes export or import, not %s\n", role.c_str());
  return 2;
}

}  // namespace tessera::workload
