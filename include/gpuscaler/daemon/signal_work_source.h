// The daemon's WorkSource: demand derived from live signals (queue depth and
// GPU utilisation per workload class), as the policy's targets ask.
//
// For each class with a queue-depth signal, every tick:
//  - GPUs needed to drain the backlog within the class's target:
//      needed_gpus = ceil(queue_depth / (jobs_per_gpu_per_minute x max_queue_wait in minutes))
//    when both targets are set, else one job shape per queued job; the
//    class's units are ceil(needed_gpus / gpus_per_job) jobs of its shape
//    (policy `shape`), each one DemandUnit;
//  - those units are assigned to the nodes of the pools that may serve the
//    class, oldest node first, as far as each node's GPUs, vCPU and memory
//    go (classes in priority order share nodes); what does not fit is
//    Pending(), to be launched for; a node left with nothing is a candidate
//    for removal (after the policy's stabilisation window and disruption
//    rules);
//  - a node whose GPU utilisation (a per-host series of the class's
//    gpu_utilization signal, matched on node id, instance id or the
//    kubernetes.io/hostname label) is at or above the class's
//    scale_in_utilization_below keeps at least one unit of the class, so a
//    busy node is never removed because the queue happens to be empty.
// Fail static: when the queue depth is missing or stale the class keeps its
// last good demand (never zero), and Signals() reports the signal so the
// controller blocks scale-down for the class; at start, before any good
// reading, a class has no demand and nothing of it is removed.
// Not thread-safe: Update() and the WorkSource calls come from one thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/signals/signal.h"

namespace gpuscaler::daemon {

// One collected signal of one class.
struct ClassSignal {
  std::string workload_class;
  enum class Kind { kQueueDepth, kGpuUtilization } kind = Kind::kQueueDepth;
  signals::SignalReading reading;        // the aggregate (depth, or mean utilisation in [0,1])
  std::map<std::string, double> by_host;  // utilisation per host, in [0,1]
};

// What Kubernetes says (src/daemon/kube_setup.cc): unschedulable GPU pods
// and the pods bound to each node. Their units come before queue-derived
// ones: pending pods are added to Pending(), bound pods take their node's
// room first and are part of RunningOn(instance id).
struct ClusterWork {
  std::vector<DemandUnit> pending;
  std::map<std::string, std::vector<DemandUnit>> running;  // by instance id
  // The cluster view's freshness (source "kubernetes", every class): stale
  // or missing blocks scale-down, as for any signal.
  SignalStatus status;
};

class SignalWorkSource final : public WorkSource {
 public:
  explicit SignalWorkSource(const Catalog& catalog) : catalog_(catalog) {}

  // Recomputes demand from `signals` (already judged for freshness against
  // the policy at `now`), the controller's current `nodes` and, with
  // Kubernetes, `cluster` (may be null).
  void Update(const Policy& policy, const std::vector<ClassSignal>& signals, const std::vector<Node>& nodes,
              WallTime now, const ClusterWork* cluster = nullptr);

  const std::vector<DemandUnit>& Pending() override { return pending_; }
  uint64_t PendingVersion() const override { return pending_version_; }
  const std::vector<DemandUnit>& RunningOn(const std::string& instance_id) override;
  uint64_t RunningVersion(const std::string& instance_id) const override;
  std::vector<SignalStatus> Signals() const override { return statuses_; }

  // Units the class wants in total (placed or pending), as of the last Update.
  int DesiredUnits(const std::string& workload_class) const;
  // Last usable queue depth per class (held while the signal is bad).
  const std::map<std::string, double>& queue_depths() const { return last_depth_; }

 private:
  struct Assigned {
    std::vector<DemandUnit> units;
    uint64_t version = 0;
    std::string signature;
  };

  const Catalog& catalog_;
  std::vector<DemandUnit> pending_;
  std::string pending_signature_;
  uint64_t pending_version_ = 1;
  std::unordered_map<std::string, Assigned> running_;  // by instance id
  uint64_t version_counter_ = 1;
  std::map<std::string, int> desired_;
  std::map<std::string, double> last_depth_;  // last usable reading per class
  std::vector<SignalStatus> statuses_;
};

// One unit of the class's job shape (policy `shape`), with the given id.
DemandUnit UnitForClass(const WorkloadClassPolicy& cls, std::string id);

// Units a class needs for a backlog of `queue_depth` jobs (see above).
int UnitsForQueueDepth(const WorkloadClassPolicy& cls, double queue_depth);

// The node's measured GPU utilisation (0..1) in a per-host utilisation
// signal: the series of its name, instance id or kubernetes.io/hostname
// label. nullptr when the reading is not fresh or has no series for it.
const double* HostUtilization(const ClassSignal& util, const Node& node);

// The node's measured mean GPU utilisation over the fresh per-host
// utilisation signals of `signals` (every class's: one DCGM scrape feeds
// them all); nullopt when none measures it (missing, not idle).
std::optional<double> MeasuredUtilization(const std::vector<ClassSignal>& signals, const Node& node);

}  // namespace gpuscaler::daemon
