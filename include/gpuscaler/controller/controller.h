// The controller: the control loop shared by the daemon (`gpuscaler run`,
// live and demo) and the simulator (`gpuscaler sim`). Tick() is the one loop
// function every caller runs; it is a pipeline of parts that own their
// state (docs/architecture.md):
//
//   observe (ClusterState: instances, notices, prices, running work, learned
//            risk and availability → the Snapshot)
//   → gate  (ReplanGate: plan, or reuse the last plan when nothing changed)
//   → plan  (the planner: a pure function of snapshot and policy)
//   → govern (fail static on blocked classes or an unread instance list;
//            ScalingGovernor: stabilization, cooldowns, max step)
//   → record the decision (AuditStore)
//   → act   (Actuator: intent, call, outcome; returns what changed)
//   → commit (ClusterState applies the changes; UsageMeter rows; one
//            BeginTick/CommitTick transaction per tick).
//
// The first Tick also rebuilds learned interruption risk from the store and
// finishes the intents a crash left open (Actuator::Recover). A "replace
// with cheaper" removes the old node only once its replacement is ready
// (launch first: no gap in capacity); until then the old node keeps its
// work and takes no new work. With
// ClusterNodes, each tick first closes the node drains that ended since the
// last one (drains run outside the tick; see actuator.h).
//
// No I/O but through the seams, no time but the Clock. Not thread-safe: one
// thread calls Tick and SetPolicy.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/actuator.h"
#include "gpuscaler/controller/availability.h"
#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/controller/cluster_state.h"
#include "gpuscaler/controller/decision_recorder.h"
#include "gpuscaler/controller/demand_watch.h"
#include "gpuscaler/controller/forecast.h"
#include "gpuscaler/controller/interruption_risk.h"
#include "gpuscaler/controller/replacements.h"
#include "gpuscaler/controller/replan_gate.h"
#include "gpuscaler/controller/scaling.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/controller/usage_meter.h"
#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

using PlannerFn = std::function<Plan(const Snapshot&, const Policy&)>;

// What the loop and its parts are given. The defaults suit tests; callers
// start from a preset:
//  - ForDaemon(): every tick reads the instance list and replans whenever an
//    input changed; up to 20,000 pending units reach the planner (it takes
//    10k units well inside a tick).
//  - ForSimulation(policy): what differs for speed when months are replayed
//    in minutes. The instance list is read every 5 minutes (a node becoming
//    ready only moves it between two states the planner treats alike, and
//    interrupted nodes leave at their notice deadline), every tick with
//    warm capacity (a refill is stopped once listed running); idle and covered
//    ticks reuse the last plan for max(60 s, scale_down_stabilization),
//    which the stabilization window would have held anyway; the planner sees
//    the first 2,000 pending units in scheduling order (a replayed trace can
//    queue hundreds of thousands of jobs).
// The daemon's demo runs ForDaemon() against the simulated cloud. The
// cluster state's options (regions, pending units, availability marks,
// learned risk, listing cadence, restore) are its base.
struct ControllerOptions : ClusterStateOptions {
  std::string source = "daemon";  // DecisionRecord::source
  // Extra tags on every launch (kOwnerTag is always set to the pool).
  std::map<std::string, std::string> tags;
  std::string token_prefix;  // see ActuatorOptions
  bool dry_run = false;  // plan and audit; never call Launch or Terminate
  bool reuse_unchanged_plans = true;
  Seconds max_plan_reuse{900};
  Seconds idle_replan_interval{0};  // see ReplanGate
  // Usage rows are written per node and class for intervals of this length.
  Seconds usage_interval{3600};
  // How often the open (not yet full) interval of each node is written, so
  // that a report taken while the controller runs sees usage up to then;
  // zero: never (UsageMeter::SetOpenIntervalCadence).
  Seconds open_usage_every{0};
  Seconds intent_replay_window{600};  // see ActuatorOptions

  static ControllerOptions ForDaemon();
  static ControllerOptions ForSimulation(const Policy& policy);
};

class Controller {
 public:
  // All references must outlive the controller. `store` may be null: nothing
  // is recorded (simulations without --db). An empty `planner` is MakePlan.
  Controller(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
             const Catalog& catalog, Policy policy, ControllerOptions options = {}, PlannerFn planner = {});

  // Takes effect at the next tick.
  void SetPolicy(Policy policy);
  // With Kubernetes: registration, repair and drains go through `nodes`
  // (see cluster_nodes.h); null: none. Must outlive the controller; set
  // before the first tick.
  void SetClusterNodes(ClusterNodes* nodes);
  const Policy& policy() const { return policy_; }

  // One pass of the loop (see the top of this file).
  TickReport Tick();

  // The snapshot the last tick planned from (or would have), as the
  // actuator's changes left it; valid until the next Tick.
  const Snapshot& snapshot() const { return state_.snapshot(); }
  // The same as a value that later ticks never change (copy on write: the
  // next tick copies it only if it is still held then).
  std::shared_ptr<const Snapshot> SharedSnapshot() const { return state_.SharedSnapshot(); }
  const OfferingAvailability& availability() const { return state_.availability(); }
  const InterruptionRiskEstimator& interruption_risk() const { return state_.interruption_risk(); }
  // Writes usage and lost work accumulated so far (before shutdown / at the
  // end of a simulation). Outside a tick.
  Status FlushUsage();
  // The node's measured mean GPU utilisation (0..1; nullopt: not measured),
  // for the busy time of its usage rows (UsageMeter::SetUtilization).
  void SetNodeUtilization(const std::string& instance_id, std::optional<double> utilization) {
    usage_.SetUtilization(instance_id, utilization);
  }
  // The demand histories behind classes[].forecast. Each tick records the
  // GPUs of every forecast class's pending and running work (the snapshot's:
  // pending work beyond max_pending_units is not counted); the daemon warms
  // them at start from the signals' history (Record before the first tick).
  DemandForecaster& forecaster() { return demand_.forecaster(); }
  const DemandForecaster& forecaster() const { return demand_.forecaster(); }
  // Spend this month by team (UsageMeter::month_to_date_usd_by_team).
  const std::map<std::string, double>& month_to_date_usd_by_team() const { return usage_.month_to_date_usd_by_team(); }

 private:
  // Fail static, then the governor; edits `plan`. True when the plan changed
  // in any way (held back, notes added, summary rewritten).
  bool Govern(bool listed, WallTime now, Plan* plan, TickReport* report);
  // The node lifecycle's terminations (registration timeouts, repairs) join
  // the plan after the governor: they remove no capacity the planner counts.
  // True when any was added.
  bool AddRepairs(Plan* plan) const;
  // Plans, governs, records and acts (the gate said plan).
  void PlanAndAct(bool listed, WallTime now, TickReport* report);
  void Commit(const ActuationResult& result, WallTime now, bool structural, TickReport* report);
  // The GPU time and lost work the work source measured since the last
  // call, into the usage meter (with a store only): both are taken and
  // metered whatever the other's outcome; the outcome of each.
  std::vector<Status> MeterMeasuredWork(WallTime now);

  const Clock& clock_;
  WorkSource& work_;
  Policy policy_;
  // Before planner_: it is told whether a planner was given, before the
  // constructor moves that planner into planner_.
  DecisionRecorder recorder_;
  PlannerFn planner_;
  UsageMeter usage_;
  ClusterState state_;
  ReplanGate gate_;
  ScalingGovernor governor_;
  Actuator actuator_;
  ReplacementTracker replacements_;
  DemandWatch demand_;
};

}  // namespace gpuscaler
