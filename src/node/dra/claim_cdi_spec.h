// The CDI spec of a prepared claim: one file per claim (kind tessera.io/claim), one CDI device per
// GPU of the claim. kubelet gives a container the CDI devices of the claim's devices whose
// requests it names (pod.spec.containers[].resources.claims[].request; every device of the claim
// when it names none), and the runtime applies a spec's own containerEdits once when it injects
// any device of the spec. So each GPU's device, `tessera.io/claim=<uid>-gpu-<index>`, holds that
// GPU's device node alone, and what every container of the claim gets is in the spec's edits: the
// driver's control nodes and the mounts (limits folder, region, library, /etc/ld.so.preload). A
// container naming one request sees only that request's GPUs; one naming two requests gets both
// devices and so both GPUs.
//
// The spec also keeps the device `tessera.io/claim=<uid>` with all the claim's GPUs, the one ID an
// agent before 2026-12 answered for every device: kubelet keeps the IDs of a prepared claim until
// it prepares it again (its own restart), so a container of such a pod that restarts after the
// agent's upgrade still finds its device.
//
// Pure functions; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "node/allocation/allocation_files.h"
#include "node/dra/claim_grant.h"
#include "node/gpu/gpu.h"

namespace tessera::node::dra {

// "tessera.io/claim=<uid>-<device>": the CDI device of the claim's device `device` (gpu-<index>).
std::string ClaimDeviceCdiId(const std::string& claim_uid, const std::string& device);

// The spec (JSON text) for the prepared claim `uid`, on a node whose GPUs are `gpus`, with `mounts`
// in the spec's edits (none for administrative access). Each device is named after the device the
// answer named (claim.devices, as prepared: a reboot that renumbers the GPUs renames nothing) and
// holds the node of its GPU in claim.grant (the same order: each GPU where its first device is).
// NotFound when a GPU of the grant is not on the node; FailedPrecondition when the devices and the
// GPUs do not pair up.
Result<std::string> ClaimCdiSpecText(const std::string& uid, const ClaimGrant& claim,
                                     const std::vector<GpuInfo>& gpus,
                                     const std::string& driver_root,
                                     const std::vector<MountSpec>& mounts);

}  // namespace tessera::node::dra
