#include "load.h"

namespace tessera::gpu_check {

Status RunBusy(Device& d, const std::vector<CUstream>& streams, const std::vector<Kernel>& cycle,
               int batch, int64_t end_ns) {
  const Cuda& cuda = d.cuda();
  size_t n_streams = streams.size();
  // Two events per stream: the batch just launched and the one before.
  std::vector<CUevent> events(2 * n_streams);
  for (CUevent& e : events) {
    CU_RETURN_IF_ERROR(cuda, cuda.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  }
  size_t next = 0;
  for (long round = 0; RealtimeNs() < end_ns; ++round) {
    if (d.room() < static_cast<size_t>(batch) * n_streams) {
      return ResourceExhausted("the stamps buffer is full: make the run shorter");
    }
    for (size_t s = 0; s < n_streams; ++s) {
      for (int k = 0; k < batch; ++k) {
        RETURN_IF_ERROR(d.Launch(streams[s], cycle[next++ % cycle.size()], static_cast<int>(s)));
      }
      CU_RETURN_IF_ERROR(cuda, cuda.cuEventRecord(events[2 * s + round % 2], streams[s]));
    }
    if (round == 0) continue;
    for (size_t s = 0; s < n_streams; ++s) {
      CU_RETURN_IF_ERROR(cuda, cuda.cuEventSynchronize(events[2 * s + (round + 1) % 2]));
    }
  }
  for (CUstream s : streams) CU_RETURN_IF_ERROR(cuda, cuda.cuStreamSynchronize(s));
  for (CUevent e : events) CU_RETURN_IF_ERROR(cuda, cuda.cuEventDestroy_v2(e));
  return Status::Ok();
}

Status RunDuty(Device& d, CUstream stream, Kernel k, double duty, int64_t end_ns) {
  const Cuda& cuda = d.cuda();
  int64_t pause_ns = static_cast<int64_t>(static_cast<double>(k.arg) * (1 / duty - 1));
  while (RealtimeNs() < end_ns) {
    RETURN_IF_ERROR(d.Launch(stream, k, 0));
    CU_RETURN_IF_ERROR(cuda, cuda.cuStreamSynchronize(stream));
    SleepNs(pause_ns);
  }
  return Status::Ok();
}

Status LaunchMany(Device& d, CUstream stream, Kernel k, int count, int tag) {
  for (int i = 0; i < count; ++i) RETURN_IF_ERROR(d.Launch(stream, k, tag));
  return Status::Ok();
}

}  // namespace tessera::gpu_check
