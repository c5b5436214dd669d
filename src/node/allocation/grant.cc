#include "node/allocation/grant.h"

#include "annotations/allocation.h"

namespace tessera::node {

Result<std::optional<Grant>> GrantFromAllocation(const std::string& annotation,
                                                 const std::string& container,
                                                 const std::string& node) {
  ASSIGN_OR_RETURN(annotations::Allocation decision, annotations::ParseAllocation(annotation));
  if (decision.node != node) {
    return InvalidArgument(std::string(kAllocationAnnotation) + ": the decision is for node " +
                           decision.node + ", this is " + node);
  }
  const annotations::ContainerAllocation* mine = decision.Find(container);
  if (mine == nullptr) return std::optional<Grant>();
  Grant g;
  g.mode = annotations::ComputeModeName(mine->mode);
  for (const annotations::DeviceAllocation& d : mine->devices) {
    g.devices.push_back({d.uuid, d.memory_mib, d.cores, d.cores_limit});
  }
  return std::optional<Grant>(g);
}

}  // namespace tessera::node
