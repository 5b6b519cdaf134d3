// The controller: one tick of the control loop, shared by the daemon
// (`gpuscaler run`) and the simulator (`gpuscaler sim`).
//
// Tick():
//  1. reads interruption notices, the provider's instances and new spot
//     prices; merges them with what the controller launched and with the
//     work running on each node (WorkSource);
//  2. builds the Snapshot: pending units (plus, for every node under an
//     interruption notice, its running units again as replacement demand),
//     nodes, catalog offerings priced with live spot prices, marked
//     unavailable after capacity errors (OfferingAvailability) and, on spot,
//     with the interruption rate learned from the notices the controller has
//     seen per node-hour of spot exposure, the catalog's rate as the prior
//     (InterruptionRiskEstimator; nodes carry their offering's rate), and the
//     classes whose signals are stale or missing (scale_down_blocked_classes:
//     fail static, never read as zero);
//  3. calls the planner (default MakePlan; baselines plug in here);
//  4. drops terminations of nodes that run, or whose pool serves, a blocked
//     class (even if the planner proposed them), damps the plan with the
//     ScalingGovernor (stabilization, cooldowns, max step) and drops every
//     termination when the instance list could not be read;
//  5. actuates: for each action the intent is written to the AuditStore
//     before the cloud is called (idempotency token "<decision id>-<action
//     index>"), then the outcome; a capacity error marks the offering
//     unavailable and the provider moves on to the launch's fallbacks;
//  6. records the decision, node launches, ends, prices, price samples and
//     usage in one BeginTick/CommitTick.
// No I/O but through the seams, no time but the Clock.
//
// When nothing the planner sees has changed since the previous tick, that
// plan asked for nothing, no node crossed the policy's min_node_age, no held
// action can expire and less than `max_plan_reuse` has passed, the tick
// reuses the previous (empty) plan instead of calling the planner: the
// planner is deterministic, so the result is the same, and the simulator
// stays fast. Such ticks write no decision row. idle_replan_interval skips
// more ticks (see ControllerOptions).
//
// Learned state across restarts: the first Tick rebuilds the interruption
// evidence from the store's node lifecycles (AuditStore::NodeLifecycles:
// spot exposure from launch to end, and an interruption at the end of every
// node that ended "interrupted"), decayed as if the controller had watched
// it; capacity-error marks are short-lived (at most unavailable_max) and
// start empty.
//
// Not thread-safe: one thread calls Tick and SetPolicy.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/availability.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/controller/interruption_risk.h"
#include "gpuscaler/controller/scaling.h"
#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

using PlannerFn = std::function<Plan(const Snapshot&, const Policy&)>;

struct ControllerOptions {
  std::string source = "daemon";  // DecisionRecord::source
  // Regions whose catalog offerings are offered to the planner; empty: all.
  std::vector<std::string> regions;
  // Extra tags on every launch (kOwnerTag is always set to the pool).
  std::map<std::string, std::string> tags;
  bool dry_run = false;  // plan and audit; never call Launch or Terminate
  bool reuse_unchanged_plans = true;
  Seconds max_plan_reuse{900};
  // A consolidation interval. With it non-zero, the planner is skipped
  // (until the interval has passed since it last ran) on ticks where
  //  - nothing is pending: it could only propose removals, which the
  //    scale-down stabilization window delays anyway; or
  //  - every pending unit was in the last planned snapshot, the governor
  //    held back no launch (held removals wait for the interval), and no node (other than those the last plan
  //    launched or removed), availability mark, capacity error, notice,
  //    blocked class or policy changed since: the units are already provided
  //    for (on launching nodes) or unplaced for a reason that still holds.
  // Running work and prices may change meanwhile; they matter only to
  // removals and replacements. 0 (the daemon's default): every tick that
  // changed.
  Seconds idle_replan_interval{0};
  // At most this many pending units (in scheduling order) go to the planner.
  size_t max_pending_units = 5000;
  Seconds unavailable_base{180};
  Seconds unavailable_max{3600};
  // Learned spot interruption rates (see InterruptionRiskEstimator). Off:
  // the planner sees the catalog's rates.
  bool learn_interruption_risk = true;
  InterruptionRiskOptions interruption_risk;
  // Rates reach the snapshot at once after a notice, else at most this
  // often (decay and exposure move them slowly), and only when one moved
  // by more than 5 % and 0.001 per node-hour: an unchanged snapshot lets a
  // tick reuse its plan.
  Seconds risk_refresh_interval{600};
  // How far back the first tick reads node lifecycles to rebuild the
  // evidence (beyond ~7 half-lives it weighs < 1 %).
  Seconds risk_history{Seconds(14 * 24 * 3600)};
  // How often the provider's instance list is read (0: every tick). Between
  // reads the controller relies on what it launched and terminated and on
  // interruption deadlines (a node is gone at its deadline).
  Seconds reconcile_interval{0};
  // Usage rows are written per node and class for intervals of this length.
  Seconds usage_interval{3600};
  // Restart recovery (the first tick): a launch intent left open by a crash
  // and younger than this is sent again with its own idempotency token, so
  // the cloud returns the instances of the first call if it got through and
  // launches them if it did not; an older one is closed without a call.
  // Either way every listed instance tagged with the intent's token (a
  // fallback run's, under its own ClientToken) is recorded as the action's.
  Seconds intent_replay_window{600};
};

struct TickReport {
  WallTime time{};
  bool planned = false;         // false: the previous plan was reused
  int64_t decision_id = 0;      // 0 when no decision was recorded
  Plan plan;                    // after the governor (empty when reused)
  int nodes_requested = 0;
  int nodes_launched = 0;
  int nodes_terminated = 0;
  int capacity_errors = 0;
  int interruption_notices = 0;
  std::vector<std::string> blocked_classes;
  GovernorResult governor;
  // Non-fatal problems this tick (provider or store errors), in order.
  std::vector<Error> errors;
};

class Controller {
 public:
  // All references must outlive the controller. `store` may be null: nothing
  // is recorded (simulations without --db).
  Controller(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work, const Catalog& catalog,
             Policy policy, ControllerOptions options = {}, PlannerFn planner = {});

  // Takes effect at the next tick.
  void SetPolicy(Policy policy);
  const Policy& policy() const { return policy_; }

  // The first Tick also reconciles the store's open intents (see
  // ControllerOptions::intent_replay_window and RecoverOpenIntents).
  TickReport Tick();

  // The snapshot the last tick planned from (or would have).
  const Snapshot& snapshot() const { return snapshot_; }
  const OfferingAvailability& availability() const { return availability_; }
  const InterruptionRiskEstimator& interruption_risk() const { return risk_; }
  // Writes usage accumulated so far (call before shutdown / at the end of a
  // simulation). Outside a tick.
  Status FlushUsage();

 private:
  struct NodeInfo {
    int64_t decision_id = 0;
    int offering = -1;  // index in snapshot_.offerings (-1: not in the catalog)
    std::optional<WallTime> notice_deadline;
    uint64_t running_version = ~uint64_t{0};
    // Usage accumulation: GPUs allocated per class since usage_start.
    std::map<std::string, double> gpu_seconds;
    std::map<std::string, double> gpus_by_class;  // of node.running
    WallTime usage_start{};
  };

  void DropBlockedTerminations(Plan* plan, TickReport* report) const;
  // After a restart: every action whose intent was recorded but not its
  // outcome. Launches are replayed with their token (or closed as abandoned
  // when older than the replay window); terminations are sent again
  // (idempotent). Outcomes and node launches are recorded as usual.
  void RecoverOpenIntents(TickReport* report);
  void ReadInterruptions(TickReport* report);
  bool ReadInstances(TickReport* report);
  void ReadPrices(TickReport* report);
  void RefreshOfferings(WallTime now);
  // Rebuilds interruption evidence from the store's node lifecycles (first
  // tick only).
  void RestoreRisk(WallTime now, TickReport* report);
  // Moves exposure accumulated per offering into the estimator, as of `now`.
  void FlushExposure(WallTime now);
  // Pushes learned rates into snapshot offerings and nodes (see
  // risk_refresh_interval).
  void RefreshRisk(WallTime now);
  void RefreshWork(WallTime now);
  void RefreshSignals(WallTime now, TickReport* report);
  void AccumulateUsage(WallTime now);
  void Actuate(int64_t decision_id, const Plan& plan, TickReport* report);
  void LaunchOne(int64_t decision_id, size_t index, const LaunchAction& launch, TickReport* report);
  void TerminateOne(int64_t decision_id, size_t index, const TerminationAction& term, TickReport* report);
  void AddNode(const Instance& instance, int64_t decision_id, NodeState state);
  void RemoveNode(size_t index, WallTime end, const std::string& cause, TickReport* report);
  void Record(const Status& s, TickReport* report);
  std::string SignalsJson(WallTime now) const;
  std::string SummaryJson() const;
  Status FlushUsageFor(size_t index, WallTime now);

  const Clock& clock_;
  CloudProvider& cloud_;
  AuditStore* store_;
  WorkSource& work_;
  const Catalog& catalog_;
  Policy policy_;
  ControllerOptions options_;
  PlannerFn planner_;

  Snapshot snapshot_;
  std::vector<NodeInfo> node_info_;  // parallel to snapshot_.nodes
  std::unordered_map<std::string, size_t> node_index_;  // instance id -> index
  std::unordered_map<std::string, size_t> offering_index_;  // Offering::Key -> index
  std::set<std::string> terminated_;  // we terminated these; ignore if still listed
  OfferingAvailability availability_;
  InterruptionRiskEstimator risk_;
  // Per offering (parallel to snapshot_.offerings): the catalog's rate (the
  // prior), the estimator's key and group ("<family>/<zone>"), and spot
  // node-hours not yet given to the estimator.
  std::vector<double> prior_rate_;
  std::vector<std::string> offering_key_;
  std::vector<std::string> risk_group_;
  std::vector<double> unflushed_exposure_h_;
  std::optional<WallTime> last_risk_refresh_;
  bool risk_dirty_ = false;
  bool risk_restored_ = false;
  ScalingGovernor governor_;

  uint64_t pending_version_ = ~uint64_t{0};
  bool shadows_dirty_ = false;
  int64_t local_decisions_ = 0;
  bool changed_ = true;
  bool structure_changed_ = true;  // nodes, availability, blocked classes, policy
  bool last_plan_launched_nothing_ = false;
  bool actuating_ = false;
  bool recovered_ = false;
  int last_launches_held_ = 0;
  std::unordered_set<std::string> last_pending_ids_;
  bool last_plan_empty_ = false;
  WallTime last_plan_time_{};
  std::optional<WallTime> price_since_;
  std::optional<WallTime> last_tick_;
  std::optional<WallTime> last_list_;
  bool last_list_ok_ = true;
  std::vector<std::string> last_unavailable_;
  std::vector<std::string> blocked_;
  std::vector<SignalStatus> signals_;
  std::string month_key_;
};

}  // namespace gpuscaler
