#include "gpuscaler/kube/cluster_provider.h"

namespace gpuscaler::kube {

Result<LaunchResult> ClusterCloudProvider::Launch(const LaunchRequest& request) {
  if (!Leading()) return Error::Transient("not the leader: launch of " + std::to_string(request.count) + " node(s) skipped");
  return parts_.inner->Launch(request);
}

Status ClusterCloudProvider::Terminate(const std::vector<std::string>& instance_ids) {
  if (!Leading()) return Error::Transient("not the leader: termination skipped");
  return parts_.inner->Terminate(instance_ids);
}

}  // namespace gpuscaler::kube
