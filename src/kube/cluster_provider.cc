#include "gpuscaler/kube/cluster_provider.h"

namespace gpuscaler::kube {

Result<LaunchResult> ClusterCloudProvider::Launch(const LaunchRequest& request) {
  if (!Leading()) return Error::Transient("not the leader: launch of " + std::to_string(request.count) + " node(s) skipped");
  return parts_.inner->Launch(request);
}

Status ClusterCloudProvider::Terminate(const std::vector<std::string>& instance_ids) {
  if (!Leading()) return Error::Transient("not the leader: termination skipped");
  const ClusterView view = parts_.cache->View();
  std::vector<std::string> ready;
  std::string failures;
  for (const std::string& id : instance_ids) {
    const NodeInfo* node = nullptr;
    for (const NodeInfo& n : view.nodes) {
      if (!id.empty() && n.instance_id == id) node = &n;
    }
    if (node != nullptr) {
      ++drains_;
      DrainOptions options = parts_.drain_options ? parts_.drain_options(id) : DrainOptions{};
      Result<DrainResult> drained = parts_.drainer->Drain(node->name, options);
      if (!drained) {
        failures += (failures.empty() ? "" : "; ") + drained.error().message();
        continue;
      }
    }
    // Leadership may have gone while draining: check again right before the
    // irreversible call.
    if (!Leading()) return Error::Transient("not the leader: termination skipped after drain");
    ready.push_back(id);
  }
  if (!ready.empty()) {
    if (Status s = parts_.inner->Terminate(ready); !s.ok()) return s;
  }
  if (!failures.empty()) return Error::Transient("drain before termination failed: " + failures);
  return Status::Ok();
}

}  // namespace gpuscaler::kube
