// The pools' warm capacity as the controller observes it (pools[].warm):
// stopped instances waiting to be woken, and refills on their way to being
// stopped. Part of the cluster state (cluster_state.h): warm instances are
// not nodes of the snapshot (they take no work) but its `warm_nodes`.
//
// An instance is warm from the refill launch that made it (AddFilling) or
// from the first listing that shows it stopped (adopted: one stopped by an
// earlier run of the controller, or by an Auto Scaling group's warm pool),
// until it is woken (Woken) or is no longer listed. With ClusterNodes a
// refill's node is cordoned as soon as it registers (before its GPUs are
// allocatable, so no GPU pod lands on it). A refill is ready to be stopped
// once its instance runs and, with ClusterNodes, its node is Ready: the
// image is pulled and the driver loaded, which is what a wake saves.
// A woken instance is put back in service (ClusterNodes::SetWarm false)
// once its node is Ready again.
//
// In memory only: after a restart, stopped instances are adopted again
// from the listing; a refill that was still booting is a node like any
// other (empty, so the planner removes it or gives it work once its warm
// taint is gone).
//
// Values only, no I/O. Not thread-safe: the loop's thread only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/actuation_result.h"
#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

class WarmCapacity {
 public:
  // A refill launched (LaunchAction::into_warm).
  void AddFilling(const Instance& instance, WallTime now);
  // The actuator asked the cloud to stop it.
  void MarkStopping(const std::string& instance_id, WallTime now);
  // The actuator started it: it leaves the warm capacity and, with
  // ClusterNodes, is put back in service once its node is Ready.
  void Woken(const std::string& instance_id);
  // Terminated by a plan (a retirement).
  void Remove(const std::string& instance_id) { entries_.erase(instance_id); }
  bool Has(const std::string& instance_id) const { return entries_.count(instance_id) != 0; }

  // The provider's listing: stopped instances of pools with pools[].warm
  // are (or become) stopped warm nodes; warm instances no longer listed are
  // dropped. Returns whether the warm capacity changed.
  bool Listed(const std::vector<Instance>& listed, const Policy& policy, WallTime now);

  // What the nodes need now: refills ready to stop, woken nodes Ready again
  // (those are forgotten once returned).
  void NodeActionsDue(const Snapshot& snapshot, const Policy& policy, ClusterNodes* nodes, NodeActions* actions);

  // The snapshot's warm nodes (pool, then instance id), with what each
  // costs while it waits (solver/warm_pool.h's rule).
  std::vector<WarmNode> Publish(const Snapshot& snapshot, const Policy& policy) const;

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Instance instance;
    bool stopped = false;    // listed stopped (or stopping)
    bool stop_sent = false;  // the actuator asked for the stop
    bool cordoned = false;   // its node's cordon was asked for
    WallTime since{};        // launched at while filling, stopped at after
  };
  std::map<std::string, Entry> entries_;
  std::set<std::string> returning_;  // woken, node not Ready yet
};

}  // namespace gpuscaler
