/* Stream capture hooks: the compute limiter's sampler queries events and streams, which the
 * driver forbids while a capture is active (cuStreamBeginCapture's modes: in global mode, from
 * any thread of the process), and the capture is then invalidated. The limiter is told when
 * captures begin (cuStreamBeginCapture, cuStreamBeginCaptureToGraph) and end (cuStreamEndCapture)
 * through compute_capture_begun/ended, and takes no sample meanwhile. */
#include "os.h"

#include "compute.h"
#include "hooks.h"
#include "real.h"

typedef CUresult (*begin_capture_v1_fn)(CUstream);
typedef __typeof__(&cuStreamBeginCapture_v2) begin_capture_fn;
typedef __typeof__(&cuStreamBeginCaptureToGraph) begin_capture_to_graph_fn;
typedef __typeof__(&cuStreamEndCapture) end_capture_fn;

CUresult hook_begin_capture_v1(void* real, CUstream stream) {
  begin_capture_v1_fn fn = (begin_capture_v1_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(stream);
  HOOK_SCOPE();
  compute_capture_begun();
  CUresult rc = fn(stream);
  if (rc != CUDA_SUCCESS) compute_capture_ended();
  return rc;
}

CUresult hook_begin_capture(void* real, CUstream stream, CUstreamCaptureMode mode) {
  begin_capture_fn fn = (begin_capture_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(stream, mode);
  HOOK_SCOPE();
  compute_capture_begun(); /* before: a sample must not start while it begins */
  CUresult rc = fn(stream, mode);
  if (rc != CUDA_SUCCESS) compute_capture_ended();
  return rc;
}

CUresult hook_begin_capture_to_graph(void* real, CUstream stream, CUgraph graph,
                                     const CUgraphNode* dependencies, const CUgraphEdgeData* edges,
                                     size_t count, CUstreamCaptureMode mode) {
  begin_capture_to_graph_fn fn = (begin_capture_to_graph_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(stream, graph, dependencies, edges, count, mode);
  HOOK_SCOPE();
  compute_capture_begun();
  CUresult rc = fn(stream, graph, dependencies, edges, count, mode);
  if (rc != CUDA_SUCCESS) compute_capture_ended();
  return rc;
}

/* Whether `stream` is capturing; `unknown` when the driver cannot say. */
static int is_capturing(CUstream stream, int unknown) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  __typeof__(&cuStreamIsCapturing) query = REAL(cuStreamIsCapturing);
  if (query == NULL || query(stream, &status) != CUDA_SUCCESS) return unknown;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* `ptsz`: the per-thread default stream's variant (a 0 stream is that thread's stream). A capture
 * ends when cuStreamEndCapture succeeds or leaves the stream no longer capturing (an invalidated
 * one); it goes on when the call is refused, as from another thread than the one that began it
 * (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD). The legacy stream never captures (cuStreamIsCapturing
 * of it fails while a blocking stream captures). */
static CUresult end_capture(void* real, CUstream stream, CUgraph* graph, int ptsz) {
  end_capture_fn fn = (end_capture_fn)real;
  if (fn == NULL) return CUDA_ERROR_NOT_FOUND;
  if (tessera_in_hook) return fn(stream, graph);
  HOOK_SCOPE();
  CUstream asked = stream == NULL && ptsz ? CU_STREAM_PER_THREAD : stream;
  int legacy = asked == NULL || asked == CU_STREAM_LEGACY;
  int was = !legacy && is_capturing(asked, 1);
  CUresult rc = fn(stream, graph);
  if (was && (rc == CUDA_SUCCESS || !is_capturing(asked, 0))) compute_capture_ended();
  return rc;
}

CUresult hook_end_capture(void* real, CUstream stream, CUgraph* graph) {
  return end_capture(real, stream, graph, real == real_fn(REAL_cuStreamEndCapture_ptsz));
}

#undef cuStreamBeginCapture
HOOK_EXPORT CUresult cuStreamBeginCapture(CUstream stream) {
  return hook_begin_capture_v1(real_fn(REAL_cuStreamBeginCapture), stream);
}
HOOK_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return hook_begin_capture(real_fn(REAL_cuStreamBeginCapture_v2), stream, mode);
}
HOOK_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  return hook_begin_capture(real_fn(REAL_cuStreamBeginCapture_v2_ptsz), stream, mode);
}
HOOK_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                                 const CUgraphNode* dependencies,
                                                 const CUgraphEdgeData* edges, size_t count,
                                                 CUstreamCaptureMode mode) {
  return hook_begin_capture_to_graph(real_fn(REAL_cuStreamBeginCaptureToGraph), stream, graph,
                                     dependencies, edges, count, mode);
}
HOOK_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                                      const CUgraphNode* dependencies,
                                                      const CUgraphEdgeData* edges, size_t count,
                                                      CUstreamCaptureMode mode) {
  return hook_begin_capture_to_graph(real_fn(REAL_cuStreamBeginCaptureToGraph_ptsz), stream, graph,
                                     dependencies, edges, count, mode);
}
HOOK_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return hook_end_capture(real_fn(REAL_cuStreamEndCapture), stream, graph);
}
HOOK_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  return hook_end_capture(real_fn(REAL_cuStreamEndCapture_ptsz), stream, graph);
}
