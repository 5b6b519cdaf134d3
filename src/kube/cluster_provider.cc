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

Result<std::vector<InterruptionNotice>> ClusterCloudProvider::PollInterruptions() {
  Result<std::vector<InterruptionNotice>> cloud = parts_.inner->PollInterruptions();
  if (!parts_.node_notices) return cloud;
  std::vector<InterruptionNotice> out;
  for (InterruptionNotice& n : parts_.node_notices()) {
    auto [it, added] = node_noticed_.emplace(n.instance_id, n.deadline);
    if (!added && it->second == n.deadline) continue;
    it->second = n.deadline;
    out.push_back(std::move(n));
  }
  if (!cloud) {
    if (out.empty()) return cloud.error();
    return out;
  }
  out.insert(out.end(), cloud->begin(), cloud->end());
  return out;
}

}  // namespace gpuscaler::kube
