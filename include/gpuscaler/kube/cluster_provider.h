// ClusterCloudProvider: the CloudProvider wrapper the daemon puts around the
// real one when it runs with Kubernetes (docs/kubernetes.md):
//  - Launch and Terminate act only while this replica leads (leader
//    election); otherwise they fail with kTransient at once and touch
//    nothing, so a replica that lost its Lease mid-tick stops actuating
//    before its next cloud call;
//  - Terminate drains each instance's node first (Drainer: cordon, evict,
//    PodDisruptionBudgets respected) and terminates only the instances
//    whose nodes are empty; an instance that never registered a node is
//    terminated directly. A failed drain fails the call (the node is kept;
//    the next tick decides again).
// Reads pass through. Not thread-safe (like the providers it wraps).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/kube/cluster_cache.h"
#include "gpuscaler/kube/drain.h"

namespace gpuscaler::kube {

class ClusterCloudProvider final : public CloudProvider {
 public:
  struct Parts {
    CloudProvider* inner = nullptr;   // required
    const ClusterCache* cache = nullptr;  // required: finds the node of an instance
    Drainer* drainer = nullptr;       // required
    std::function<bool()> is_leader;  // empty: always (no leader election)
    // Drain settings for an instance (the policy's timeout, the decision's reason).
    std::function<DrainOptions(const std::string& instance_id)> drain_options;
  };
  explicit ClusterCloudProvider(Parts parts) : parts_(std::move(parts)) {}

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override { return parts_.inner->ListInstances(); }
  Result<std::vector<InterruptionNotice>> PollInterruptions() override { return parts_.inner->PollInterruptions(); }
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override { return parts_.inner->SpotPrices(since); }

  int64_t drains() const { return drains_; }

 private:
  bool Leading() const { return !parts_.is_leader || parts_.is_leader(); }
  Parts parts_;
  int64_t drains_ = 0;
};

}  // namespace gpuscaler::kube
