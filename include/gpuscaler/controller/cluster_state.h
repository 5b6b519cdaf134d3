// The cluster state: the fleet as the controller observes it, and the
// Snapshot the planner reads.
//
// Each tick Observe reads interruption notices, the provider's instances
// and new spot prices, merges them with the nodes the actuator reported and
// with the work running on each node (WorkSource), and refreshes the
// snapshot:
//  - pending units (at most max_pending_units, in scheduling order) plus,
//    for every node under an interruption notice, its running units again
//    as replacement demand (ids suffixed "@replace");
//  - nodes, with their offering's live price and learned rate;
//  - catalog offerings priced with live spot prices, marked unavailable after
//    capacity errors (OfferingAvailability) and, on spot, with the
//    interruption rate learned from the notices seen per node-hour of spot
//    exposure, the catalog's rate as the prior (InterruptionRiskEstimator);
//  - per instance family, the warm-up learned from the nodes this process
//    launched (launch to GPUs allocatable, with ClusterNodes; each
//    observation moves it a third of the way, from the catalog's launch
//    latency), which the planner charges a replacement for;
//  - the classes whose signals are stale or missing
//    (scale_down_blocked_classes: fail static, never read as zero).
// A node whose notice deadline has passed is gone, listed or not; a listed
// instance the controller did not launch is adopted ("found running").
//
// An accepted launch whose instances are not listed yet (InFlightLaunch)
// stands in the snapshot as launching placeholder nodes (id
// "awaiting/<token>/<n>", no instance id): the planner counts them as coming
// capacity, so the next tick does not ask again. A new listed instance of the
// pool takes a placeholder's place (its own launch's by the kIntentTag token,
// else the oldest one of the pool) and is recorded as launched by that
// launch's decision; a placeholder still unclaimed when the pool's
// registration_timeout has passed since the launch was accepted is dropped,
// its offering marked unavailable, and the planner sees the work unplaced
// again. Placeholders are not billed and not written as nodes. A restart
// rebuilds them from the audit store (RestoreAwaited).
//
// With ClusterNodes (Kubernetes), while the cluster's nodes are known: an
// instance that has not become a Ready node with GPUs allocatable within its
// pool's registration_timeout of its launch is given up (a repair: its
// offering is marked unavailable, the node leaves the planner's capacity and
// is terminated with the next plan); a registered node NotReady for longer
// than the pool's repair_after (when set) is replaced: its running work
// becomes replacement demand, like a noticed node's, and the node is
// terminated with the plan that launches the replacement (launches go
// first). Repairs terminate directly, without a drain.
//
// Interruption notices, with ClusterNodes: Observe asks for the node to be
// cordoned and drained (deadline: the notice's; NodeActions, which the
// actuator starts in the same tick), and its replacement is planned in that
// tick. Rebalance recommendations follow spot.on_rebalance: "cordon" takes
// the node out of scheduling (a cordon the actuator sends); "replace" also
// turns its work into replacement demand, and once no node of its pool is
// still launching, the node is removed (drained first) as a repair.
//
// Warm capacity (pools[].warm; warm_capacity.h): stopped instances and
// refills on their way are the snapshot's warm_nodes, not nodes; a refill
// whose node is ready is cordoned and stopped (NodeActions::warm_stops), a
// woken one is a launching node again and is returned to service once Ready
// (warm_returns). A node of a warm pool listed stopped leaves the nodes for
// the warm capacity (its row in the store stays open: it is billed at its
// volumes' price while stopped).
//
// Capacity Blocks: the cloud takes a block's instances back at its end
// (Reservation::TakeBackAt). A node on one is retired ahead of that
// (RetireBlockNodes): cordoned, its work replacement demand planned at once,
// and removed once the replacements have come, a drain timeout before the
// take-back at the latest.
//
// The snapshot is a value: SharedSnapshot hands out the one in force, which
// nothing changes afterwards. The state writes its next snapshot in place
// only while nobody else holds the current one, else into a copy (copy on
// write), so a snapshot a caller keeps stays as it was while later ticks
// go on. snapshot() is the current one, valid until the next call that
// changes the state (Observe, Apply, Restore, SetForecasts,
// HoldForReplacement, Protect). What changed since the last TakeChanges
// is reported for the replan gate: `any` (prices, rates, running work,
// launching→ready) and `structural` (nodes appearing or vanishing outside a
// plan, notices, availability marks, blocked classes).
//
// The snapshot also carries, per pool, the nodes removed by plans (emptied or
// consolidated, not interrupted) within the policy's disruption_interval
// (recently_disrupted), and the classes kept off spot for
// spot.fallback_duration after a spot capacity error for their work
// (spot_paused_classes; only while fallback_to_on_demand is on).
//
// Lost-work budget (classes[].max_lost_work_share): per class, the work
// lost to spot interruptions, estimated at each notice from the units on the
// noticed node (GPUs x LostWorkHoursPerInterruption: half a checkpoint
// interval for periodic checkpoints), against the GPU-hours of the class's
// running work, on any capacity type; both lose half their weight every
// interruption_risk.half_life, like the learned rates. While a class's lost
// share is above its budget it is listed in spot_budget_spent_classes (the
// planner gives it no new spot work); it leaves the list once the share is
// back under the budget, as GPU-hours without losses accrue and old losses
// fade. A restart restores the account saved last (see below).
//
// Floor held on average (classes[].spot_share_window): per class with a
// window, the GPU-hours of its running work and the part of them on
// on-demand nodes, both decayed with the window as half-life. The class's
// credit (spot_floor_credit_gpus) is the on-demand part above 1 -
// max_spot_share of the whole, over the account's weight in hours (the
// window / ln 2 once it is full): the GPUs held above the floor on average.
// Saved and restored as the lost-work account is; without a saved one the
// credit starts at 0 (the floor at every placement) and grows with evidence.
//
// Learned state across restarts: Restore rebuilds, from the store's node
// lifecycles, the interruption evidence (spot exposure from launch to end, an
// interruption at the end of every node that ended "interrupted", decayed as
// if the controller had watched it), the month-to-date spend (UsageMeter) and
// the disruption window. With a learned_state_owner, what no history
// rebuilds (the warm-up per family, capacity-error and reclaim marks, spot
// pauses, the lost-work and spot-floor accounts) is saved with the ticks
// and restored from the store's last document (learned_state.h); without
// one, these start from the priors.
//
// Parts it composes, each owning its state: the fleet inventory (which
// nodes exist and what is known of each: fleet_inventory.h), the offering
// book (prices, availability marks: offering_book.h), the spot risk
// learner (spot_risk.h) and the fleet learners, signal freshness among
// them (fleet_learners.h).
//
// No I/O but through the seams. Not thread-safe: the loop's thread only.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/actuation_result.h"
#include "gpuscaler/controller/availability.h"
#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/controller/fleet_inventory.h"
#include "gpuscaler/controller/fleet_learners.h"
#include "gpuscaler/controller/interruption_risk.h"
#include "gpuscaler/controller/offering_book.h"
#include "gpuscaler/controller/reservation_book.h"
#include "gpuscaler/controller/spot_risk.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/controller/usage_meter.h"
#include "gpuscaler/controller/warm_capacity.h"
#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

struct ClusterStateOptions {
  // Regions whose catalog offerings are offered to the planner; empty: all.
  std::vector<std::string> regions;
  // At most this many pending units (in scheduling order) go to the planner.
  size_t max_pending_units = 5000;
  Seconds unavailable_base{180};
  Seconds unavailable_max{3600};
  // Learned spot interruption rates. Off: the planner sees the catalog's.
  bool learn_interruption_risk = true;
  InterruptionRiskOptions interruption_risk;
  // Rates reach the snapshot at once after a notice, else at most this
  // often, and only when one moved by more than 5 % and 0.001 per node-hour.
  Seconds risk_refresh_interval{600};
  // How far back Restore reads node lifecycles for the learned rates.
  Seconds risk_history{Seconds(14 * 24 * 3600)};
  // Restore rebuilds learned state from the store (off: a store shared by
  // several simulated runs must not leak one run's history into the next).
  bool restore_from_store = true;
  // The name the learned state (learned_state.h) is saved and restored
  // under in the store (the daemon: its cluster name); empty: it is
  // neither saved nor restored, and starts from the priors.
  std::string learned_state_owner;
  // The decaying accounts drift every tick: saved at most this often.
  Seconds learned_state_interval{60};
  // How often the provider's instance list is read (0: every tick). Between
  // reads the state relies on what the actuator reported and on notice
  // deadlines.
  Seconds reconcile_interval{0};
};

struct StateChanges {
  bool any = false;
  bool structural = false;
};

class ClusterState {
 public:
  // All references must outlive the state; `store` may be null.
  ClusterState(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
               const Catalog& catalog, UsageMeter& usage, ClusterStateOptions options);

  // At the first call only (every tick calls it, after the usage meter's
  // Accumulate and before Observe): rebuilds learned state from the store,
  // then the launching placeholders of launches accepted before a restart
  // whose instances had not all been listed (the store's
  // AcceptedLaunchesSince, less the instances that came since). These keep
  // their launch's token, decision and acceptance time, so the planner does
  // not launch again for their work and the registration timeout still
  // counts from the launch. Instances the store already knows never fill a
  // placeholder.
  void Restore(const Policy& policy, WallTime now, TickReport* report);
  // With a learned_state_owner: saves the learned state (learned_state.h)
  // when its marks, pauses or warm-up moved, and its decaying accounts at
  // most every learned_state_interval (call inside the tick, before its
  // commit: the document lands with the tick, or not at all).
  void SaveLearned(WallTime now, TickReport* report);
  // Spot node-hours at risk since the previous call (before Observe).
  void AccumulateExposure(WallTime now);
  // Refreshes the snapshot as described above. False when the instance
  // list could not be read this tick (then nothing may be terminated).
  // What the nodes need now (drains of noticed nodes, cordons of rebalanced
  // ones) goes to `node_actions`, for the actuator: observing never acts.
  bool Observe(const Policy& policy, WallTime now, double month_to_date_usd, NodeActions* node_actions,
               TickReport* report);
  // What the actuator did: nodes launched (or found by a recovered intent)
  // are added, terminated ones removed. `structural`: the changes were not
  // asked for by the plan just made (restart recovery).
  void Apply(const ActuationResult& result, const Policy& policy, WallTime now, bool structural,
             TickReport* report);
  // Acknowledges to the provider the notices read since the last call (call
  // once what they did is committed: a crash before gets them again, and a
  // repeated notice is taken as the one already applied).
  void AcknowledgeNotices(TickReport* report);
  // With Kubernetes: registration and repair read `nodes` (null: neither).
  void SetClusterNodes(ClusterNodes* nodes) { nodes_ = nodes; }
  // Terminations the node lifecycle asks for (registration timeouts,
  // repairs), to be acted on with the next plan; a node stays listed here
  // until it is gone.
  std::vector<TerminationAction> Repairs() const;
  // A node whose replacement is coming takes no new work (`held`), or is
  // back in service (the replacement failed).
  void HoldForReplacement(const std::string& instance_id, bool held);
  // The instance is a Ready node that can take work: with ClusterNodes, a
  // Ready node with GPUs allocatable; without, a running instance. False
  // for an unknown instance.
  bool CanTakeWork(const std::string& instance_id);
  bool Has(const std::string& instance_id) const { return inventory_.Has(instance_id); }
  // Keeps the planner from removing a replacement node while the node it
  // replaces is still there (it is empty until the old node's pods move).
  void Protect(const std::string& instance_id, bool on);
  // Something the planner sees changed outside the state (policy, a failed
  // action, an unrecorded decision).
  void MarkChanged(bool structural);
  StateChanges TakeChanges();

  const Snapshot& snapshot() const { return *snapshot_; }
  std::shared_ptr<const Snapshot> SharedSnapshot() const { return snapshot_; }
  // The classes' demand forecasts for the planner (Snapshot::forecasts).
  void SetForecasts(std::vector<DemandForecast> forecasts) { Writable().forecasts = std::move(forecasts); }
  // The capacity-error and reclaim marks; the actuator's own findings come
  // back through Apply (ActuationResult::availability_events).
  const OfferingAvailability& availability() const { return book_.availability(); }
  const InterruptionRiskEstimator& interruption_risk() const { return risk_.estimator(); }
  const std::vector<std::string>& blocked_classes() const { return snapshot_->scale_down_blocked_classes; }
  // The snapshot's nodes without launching placeholders: what is paid for.
  const std::vector<Node>& BilledNodes();

  // For the decision row: the signals behind the demand and the blocked
  // classes; counts and marks of the snapshot.
  std::string SignalsJson(WallTime now) const;
  std::string SummaryJson() const;

 private:
  // Warm capacity: what the actuator did to it, and the snapshot's
  // warm_nodes with the node actions they need (after the listing).
  void ApplyWarm(const ActuationResult& result, const Policy& policy, WallTime now, TickReport* report);
  void PublishWarm(const Policy& policy, NodeActions* node_actions);


  // The snapshot to change: the current one while nobody else holds it,
  // else a copy that becomes the current one.
  Snapshot& Writable();
  void RestoreLearned(WallTime now, TickReport* report);
  // The store's learned state into the learners and marks, once: until the
  // store could be read (learned_state_read_), nothing is saved.
  void ReadLearnedState(WallTime now, TickReport* report);
  void RestoreAwaited(const Policy& policy, WallTime now, TickReport* report);
  // With ClusterNodes, a noticed node is drained at once (node_actions).
  void ReadInterruptions(const Policy& policy, WallTime now, NodeActions* node_actions, TickReport* report);
  // A rebalance recommendation, as spot.on_rebalance says.
  void OnRebalance(const std::string& instance_id, const Policy& policy, NodeActions* node_actions,
                   TickReport* report);
  // Rebalanced and retired nodes whose replacement has come are removed (a
  // repair); a retired node by its remove_by at the latest.
  void RemoveRebalanced(WallTime now);
  // Nodes on a Capacity Block, from the block's Reservation::RetireAt (with
  // the node's launch latency and disruption.drain_timeout) on: cordoned,
  // their work replacement demand, to be removed (RemoveRebalanced) once the
  // replacements have come and at the latest a drain timeout before the
  // cloud takes them back. So no work is on them when it does.
  void RetireBlockNodes(const Policy& policy, WallTime now, NodeActions* node_actions, TickReport* report);
  bool ReadInstances(const Policy& policy, WallTime now, TickReport* report);
  // Live spot prices into the offerings, and onto the nodes bought as them.
  void ReadPrices(const Policy& policy, WallTime now, TickReport* report);
  // Availability marks and learned rates into the offerings; the
  // offerings (and the nodes' rates) into the snapshot when they changed.
  void RefreshOfferings(WallTime now, bool prices_moved);
  // The selected reservations, and their reserved offerings, into the
  // snapshot when they changed.
  void ReadReservations(const Policy& policy, WallTime now, TickReport* report);
  // The book's offerings and the reserved ones: the snapshot's offerings.
  void PublishOfferings();
  // The running work on each node and the pending units (with the
  // replacement demand) into the snapshot; first pods into `reached`.
  void RefreshWork(std::vector<NodeMilestone>* reached);
  void AddNode(const Instance& instance, NodeState state, const Policy& policy, WallTime now, bool launched_here);
  Node NodeFor(const Instance& instance, NodeState state, const Policy& policy, NodeRecord* record) const;
  void RemoveNode(size_t index, WallTime end, const std::string& cause, TickReport* report);
  // Launch tracking (launch_tracking.cc).
  void AddAwaited(const InFlightLaunch& launch, const Policy& policy);
  // A listed instance not known yet: true when it fills a placeholder of its
  // launch (then it is added as launched by that launch's decision).
  bool ClaimAwaited(const Instance& instance, const Policy& policy, WallTime now, TickReport* report);
  void ExpireAwaited(WallTime now, TickReport* report);
  // Registration and repair (node_health.cc).
  // Milestones of the nodes this process launched go to `reached`.
  void CheckNodeHealth(const Policy& policy, WallTime now, std::vector<NodeMilestone>* reached, TickReport* report);
  void Milestone(size_t index, const char* stage, WallTime now, std::vector<NodeMilestone>* reached) const;

  CloudProvider& cloud_;
  AuditStore* store_;
  WorkSource& work_;
  UsageMeter& usage_;
  ClusterStateOptions options_;

  std::shared_ptr<Snapshot> snapshot_ = std::make_shared<Snapshot>();
  FleetInventory inventory_;
  WarmCapacity warm_;
  ClusterNodes* nodes_ = nullptr;
  OfferingBook book_;
  ReservationBook reservations_;
  SpotRiskLearner risk_;
  FleetLearners learners_;
  std::string saved_marks_;            // the learned state last saved, without its accounts
  std::optional<WallTime> saved_at_;   // when it was last saved
  bool learned_state_read_ = false;
  uint64_t pending_version_ = ~uint64_t{0};  // the work source's, at the last pending refresh
  std::vector<InterruptionNotice> unacknowledged_notices_;
  StateChanges changes_{true, true};
  bool restored_ = false;
};

}  // namespace gpuscaler
