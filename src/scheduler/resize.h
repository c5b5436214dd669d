// Resize: the new decision for one container of a running pod (docs/resize.md), checked against
// the GPUs of its node. The container keeps its GPUs (a resize never moves it); each of them gets
// the new memory and compute per GPU. A growth must fit beside what the other pods hold (their
// charges, as the filter counts them; a refusal reads like the filter's reason); a shrink always
// fits, and is applied as a ceiling by the in-container library. Pure functions: thread-safe.
//
//   ASSIGN_OR_RETURN(Allocation resized, ResizeDecision(current, request, gpus));
#pragma once

#include <span>
#include <string>

#include "annotations/resize.h"
#include "common/status.h"
#include "scheduler/node_fit.h"
#include "scheduler/protocol.h"

namespace tessera::scheduler {

using annotations::ParseResizeRequest;
using annotations::ParseResizeStatus;
using annotations::ResizeRequest;
using annotations::ResizeRequestToJson;
using annotations::ResizeStatus;
using annotations::ResizeStatusToJson;

// `current` with the container of `request` resized, marked `resized`. `gpus` are its node's GPUs
// with their usage, the pod's present charge (ChargesOf(current)) included. FailedPrecondition,
// saying why, when the decision has no such app container or a growth does not fit; an elastic
// container's burst cap (coresLimit) is raised to the new cores when it is below them.
Result<Allocation> ResizeDecision(const Allocation& current, const ResizeRequest& request,
                                  std::span<const GpuSlot> gpus);

// "4096 MiB and 30% cores per GPU" (cores 0: "no compute limit").
std::string SizeText(uint64_t memory_mib, int cores);

}  // namespace tessera::scheduler
