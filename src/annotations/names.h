// The annotation names of the protocol between Tessera's parts (docs/annotations.md). The
// scheduler and the node agent both read and write them, so they are declared once, here.
#pragma once

namespace tessera::annotations {

inline constexpr char kGpus[] = "tessera.io/gpus";                           // node inventory
inline constexpr char kAllocation[] = "tessera.io/allocation";               // scheduler's decision
inline constexpr char kAllocated[] = "tessera.io/allocated";                 // node's record
inline constexpr char kAllocationFailed[] = "tessera.io/allocation-failed";  // node's verdict

// Resizing a running container (resize.h, docs/resize.md): the request a user sets, and the
// scheduler's answer to it.
inline constexpr char kResize[] = "tessera.io/resize";
inline constexpr char kResizeStatus[] = "tessera.io/resize-status";

// The label the node agent puts on a node with GPUs ("true"); the webhook selects it for GPU pods
// (scheduler.webhook.gpu-node-selector), so that kube-scheduler's own filters leave CPU-only nodes
// out before it samples.
inline constexpr char kGpuNodeLabel[] = "tessera.io/gpu-node";

// The label the leading scheduler replica's pod carries ("true";
// scheduler.leader-election.pod-name): the extender's Service selects it, so that kube-scheduler
// reaches the replica that binds, and `kubectl tessera ui` prefers it (only the leader has the
// filter reasons).
inline constexpr char kLeaderLabel[] = "tessera.io/scheduler-leader";

// Beside each of the four, the signature of its value (signing.h): "<name>-signature".
inline constexpr char kSignatureSuffix[] = "-signature";
inline constexpr char kGpusSignature[] = "tessera.io/gpus-signature";
inline constexpr char kAllocationSignature[] = "tessera.io/allocation-signature";
inline constexpr char kAllocatedSignature[] = "tessera.io/allocated-signature";
inline constexpr char kAllocationFailedSignature[] = "tessera.io/allocation-failed-signature";

}  // namespace tessera::annotations
