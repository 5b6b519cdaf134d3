// FakeClusterNodes: node health set by the test; drains that end only when
// the test ends them (as a PodDisruptionBudget would hold them open).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::testing {

class FakeClusterNodes final : public ClusterNodes {
 public:
  explicit FakeClusterNodes(const Clock& clock) : clock_(clock) {}

  bool synced = true;
  std::map<std::string, NodeHealth> health;      // by instance id; absent: no node
  std::map<std::string, DrainRequest> draining;  // open drains, by instance id
  std::vector<DrainRequest> begun;               // every BeginDrain that started one
  std::map<std::string, bool> cordoned;          // last Cordon call per instance

  // A Ready node with GPUs for the instance.
  void Register(const std::string& instance_id) { health[instance_id] = {true, true, clock_.WallNow()}; }
  // Ends the instance's open drain.
  void EndDrain(const std::string& instance_id, DrainEnd end, int evicted = 1) {
    auto it = draining.find(instance_id);
    if (it == draining.end()) return;
    ended_.push_back({it->second, end, std::string(ToString(end)), started_[instance_id], clock_.WallNow(), evicted});
    draining.erase(it);
  }

  bool Synced() override { return synced; }
  std::optional<NodeHealth> Health(const std::string& instance_id) override {
    auto it = health.find(instance_id);
    if (it == health.end()) return std::nullopt;
    return it->second;
  }
  Status BeginDrain(const DrainRequest& request) override {
    if (health.count(request.instance_id) == 0) return Error::NotFound("no node for " + request.instance_id);
    if (draining.count(request.instance_id) != 0) return Status::Ok();
    draining[request.instance_id] = request;
    started_[request.instance_id] = clock_.WallNow();
    begun.push_back(request);
    return Status::Ok();
  }
  std::vector<DrainOutcome> TakeEndedDrains() override {
    std::vector<DrainOutcome> out;
    out.swap(ended_);
    return out;
  }
  Status Cordon(const std::string& instance_id, bool unschedulable) override {
    if (health.count(instance_id) == 0) return Error::NotFound("no node for " + instance_id);
    cordoned[instance_id] = unschedulable;
    return Status::Ok();
  }

 private:
  const Clock& clock_;
  std::map<std::string, WallTime> started_;
  std::vector<DrainOutcome> ended_;
};

}  // namespace gpuscaler::testing
