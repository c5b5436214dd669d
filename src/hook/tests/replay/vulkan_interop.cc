// Vulkan-CUDA interop as the CUDA samples' simpleVulkan and OptiX's denoiser interop do it: the
// Vulkan side allocates exportable memory and two timeline semaphores and hands their opaque file
// descriptors to CUDA, which imports them (cuImportExternalMemory, cuImportExternalSemaphore),
// maps a buffer on the memory (cuExternalMemoryGetMappedBuffer), waits for Vulkan's semaphore,
// works on the buffer and signals its own, then frees the buffer (cuMemFree) and destroys what it
// imported. simgpu runs no Vulkan: rank 0 stands in for it with a cuMemCreate allocation exported
// as a POSIX descriptor (charged to rank 0, as Vulkan's allocation is charged to its process) and
// eventfds for the semaphores; every rank, rank 0 in its own process and the others in theirs,
// imports it. Importing charges nothing.
#include <sys/eventfd.h>
#include <unistd.h>

#include <vector>

#include "nccl_cumem.h"
#include "rendezvous.h"
#include "replay_calls.h"
#include "replay_device.h"

namespace tessera::replay {

namespace {

constexpr uint64_t kImageBytes = 24ull << 20;  // a 2048 x 1536 RGBA float image, rounded up

CUexternalSemaphore ImportTimeline(Calls& calls) {
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  desc.handle.fd = eventfd(0, EFD_CLOEXEC);  // Vulkan's vkGetSemaphoreFdKHR, here
  CUexternalSemaphore sem = nullptr;
  calls.Note("cuImportExternalSemaphore", calls.api().ImportExternalSemaphore(&sem, &desc));
  return sem;
}

}  // namespace

int VulkanInterop(Rank& rank, Calls& calls) {
  const hooktest::Api& api = calls.api();
  const int me = rank.rank();
  if (!UseDevice(calls, 0)) return 1;
  CuMemBuffer vulkan;  // rank 0's stand-in for the Vulkan allocation
  std::vector<int> exported;
  if (me == 0) {
    vulkan = CreateMapped(calls, SharedProp(CU_MEM_LOCATION_TYPE_DEVICE, 0), kImageBytes);
    calls.Own(vulkan.size);
    int fd = -1;
    calls.Note("cuMemExportToShareableHandle",
               api.MemExportToShareableHandle(&fd, vulkan.handle,
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    exported.push_back(fd);
  }
  std::vector<std::vector<int>> received;
  rank.AllGather("", exported, &received);
  for (int fd : exported) close(fd);
  if (received[0].size() != 1) return 1;

  CUDA_EXTERNAL_MEMORY_HANDLE_DESC mem_desc{};
  mem_desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  mem_desc.handle.fd = received[0][0];  // the driver owns it from a successful import
  mem_desc.size = (kImageBytes + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20);
  CUexternalMemory memory = nullptr;
  calls.Note("cuImportExternalMemory", api.ImportExternalMemory(&memory, &mem_desc));
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC buffer_desc{};
  buffer_desc.size = kImageBytes;
  CUdeviceptr image = 0;
  calls.Note("cuExternalMemoryGetMappedBuffer",
             api.ExternalMemoryGetMappedBuffer(&image, memory, &buffer_desc));
  CUexternalSemaphore vulkan_done = ImportTimeline(calls);
  CUexternalSemaphore cuda_done = ImportTimeline(calls);

  CUstream stream = nullptr;
  calls.Note("cuStreamCreate", api.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait{};
  wait.params.fence.value = 1;
  calls.Note("cuWaitExternalSemaphoresAsync",
             api.WaitExternalSemaphoresAsync(&vulkan_done, &wait, 1, stream));
  calls.Note("cuMemsetD8Async", api.MemsetD8Async(image, 0, kImageBytes, stream));
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal{};
  signal.params.fence.value = 2;
  calls.Note("cuSignalExternalSemaphoresAsync",
             api.SignalExternalSemaphoresAsync(&cuda_done, &signal, 1, stream));
  calls.Note("cuStreamSynchronize", api.StreamSynchronize(stream));

  calls.MeasurePeak(0, 0);
  rank.Barrier();  // every rank measured with the image imported

  calls.Note("cuMemFree", api.MemFree(image));
  calls.Note("cuDestroyExternalSemaphore", api.DestroyExternalSemaphore(vulkan_done));
  calls.Note("cuDestroyExternalSemaphore", api.DestroyExternalSemaphore(cuda_done));
  calls.Note("cuDestroyExternalMemory", api.DestroyExternalMemory(memory));
  calls.Note("cuStreamDestroy", api.StreamDestroy(stream));
  rank.Barrier();  // the importers let go before the Vulkan side frees
  if (me == 0) {
    calls.Note("cuMemUnmap", api.MemUnmap(vulkan.va, vulkan.size));
    calls.Note("cuMemRelease", api.MemRelease(vulkan.handle));
    calls.Note("cuMemAddressFree", api.MemAddressFree(vulkan.va, vulkan.size));
  }
  return calls.ok() ? 0 : 1;
}

}  // namespace tessera::replay
