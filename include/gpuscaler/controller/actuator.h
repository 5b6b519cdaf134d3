// The actuator: turns a governed plan into cloud calls, safely.
//
// For every action the intent is written to the AuditStore before the cloud
// is called (idempotency token "<prefix><decision id>-<action index>"), then the
// outcome. Never calls the cloud without a durable intent: a crash between
// the call and the outcome is finished by Recover after the restart, so
// nothing is launched twice. A capacity error marks the offering in the
// given OfferingAvailability (later launches of the same plan skip it) and
// the provider moves on to the launch's fallbacks. Every offering of a launch,
// fallbacks included, is priced against the hard budgets first
// (BudgetGuard): one that would break a cap is not sent, and the action row
// says why; the outcome row names the offerings actually bought.
//
// With a ClusterNodes (Kubernetes), a termination drains the node first,
// outside the tick: the intent is written, the drain started, and the
// intent stays open until FinishDrains closes it (terminated when the drain
// ended well, failed otherwise). After a restart Recover resumes the drain
// of an open terminate intent instead of terminating at once.
//
// The actuator does not edit the snapshot: it returns what changed (nodes
// launched or found, instances terminated) and the cluster state applies it.
// Counters, notes and non-fatal errors go to the tick's report.
// Not thread-safe: the control loop's thread only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/actuation_result.h"
#include "gpuscaler/controller/availability.h"
#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

struct ActuatorOptions {
  // Extra tags on every launch (kOwnerTag is always set to the pool).
  std::map<std::string, std::string> tags;
  // Starts every idempotency token: "<cluster>-<installation id>-" in the
  // daemon, so that no two installations (or databases) share a token.
  std::string token_prefix;
  bool dry_run = false;  // never call Launch or Terminate
  // Recover: a launch intent younger than this is sent again with its own
  // token (the cloud returns the first call's instances, or launches them);
  // an older one is closed without a call.
  Seconds intent_replay_window{600};
};

// What the hard budget caps (global, per pool and per team; hourly, and
// monthly spread over the hours left) leave for launches this tick: the
// spend rate after the plan's terminations, plus what this tick has launched
// so far. The global and pool caps are charged with node prices; a team's
// with its share of them: on a running node by SplitNodePrice
// (model/money.h, the rule the planner, the usage meter, the dashboard and
// the cost report use), on a node being launched the GPUs its units will
// hold x the node's price per GPU (a launch is planned not to oversubscribe
// its node). Soft caps are not enforced here (the planner plans past them,
// with a warning).
class BudgetGuard {
 public:
  BudgetGuard(const Snapshot& snapshot, const Plan& plan, const Policy& policy);
  // Why `count` nodes of `offering` for `launch` (its pool and units) would
  // break a hard cap (one line, with the amounts), or empty when they fit.
  std::string Breach(const LaunchAction& launch, const Offering& offering, int count) const;
  // One node of `launch` was launched as `offering`.
  void Commit(const LaunchAction& launch, const Offering& offering);

 private:
  struct Cap {
    double limit = 0;  // USD per hour; infinity: no hard cap
    double spend = 0;  // USD per hour
  };
  // What `count` of `launch`'s nodes bought as `offering` add to each
  // capped team's spend.
  std::map<std::string, double> TeamCharges(const LaunchAction& launch, const Offering& offering, int count) const;

  struct TeamShare {
    std::string team;
    double gpus = 0;
  };
  const Snapshot& snapshot_;
  Cap global_;
  std::map<std::string, Cap> pools_;
  std::map<std::string, Cap> teams_;
  std::unordered_map<std::string, TeamShare> pending_by_id_;  // pending units of capped teams
};


class Actuator {
 public:
  // All references must outlive the actuator; `store` may be null (nothing
  // recorded, calls still made).
  Actuator(const Clock& clock, CloudProvider& cloud, AuditStore* store, const Catalog& catalog,
           ActuatorOptions options);

  // Executes the plan's launches (wakes and refills of warm capacity among
  // them, see WakeOne), then its terminations; a replacement's
  // termination (TerminationKind::kReplace) is not executed but returned as
  // a PendingReplacement naming the instances launched for its work (none
  // launched: the node is kept and the next plan decides again). `snapshot` is what
  // the plan was made from (terminations name its nodes); `policy` decides
  // whether a spot launch may fall back to on-demand. `availability` is the
  // cluster state's marks: fallbacks skip marked offerings, and what this
  // call learns (capacity errors, successes) applies to its later launches
  // and comes back as the result's availability_events, for the state.
  ActuationResult Act(int64_t decision_id, const Plan& plan, const Snapshot& snapshot, const Policy& policy,
                      const OfferingAvailability& availability, TickReport* report);

  // After a restart: every action whose intent was recorded but not its
  // outcome. Launches are replayed with their token (or closed when older
  // than the replay window); terminations are sent again (idempotent). Call
  // at every tick: until the open intents could be read once it tries
  // again, then it does nothing.
  void Recover(const Policy& policy, ActuationResult* result, TickReport* report);

  // Removes the old node of a replacement whose new nodes are ready.
  void FinishReplacement(const PendingReplacement& replacement, const Snapshot& snapshot, const Policy& policy,
                         ActuationResult* result, TickReport* report);
  // Drains run through `nodes` from now on (null: none). Must outlive the actuator.
  void SetClusterNodes(ClusterNodes* nodes) { nodes_ = nodes; }
  // Starts what observing asked of the nodes: drains of noticed nodes
  // (their pods leave before the deadline; the instance is terminated once
  // drained) and cordons of rebalanced ones. A node already gone (not
  // found) is no error.
  void StartNodeActions(const NodeActions& actions, WallTime now, ActuationResult* result, TickReport* report);
  // Closes the terminate intents of the drains that ended since the last
  // call (ClusterNodes::TakeEndedDrains): terminates the instances whose
  // nodes are empty; the others are kept. Without ClusterNodes: nothing.
  void FinishEndedDrains(ActuationResult* result, TickReport* report);

 private:
  // The instance ids of the launch, or empty.
  // `marks`: the availability as this Act has learned it so far.
  // `token_suffix` tells a launch apart from another of the same action
  // (the cold launch of what a wake could not start).
  std::vector<std::string> LaunchOne(int64_t decision_id, size_t index, const LaunchAction& launch,
                                     const Policy& policy, OfferingAvailability& marks, BudgetGuard& budget,
                                     ActuationResult* result, TickReport* report,
                                     const std::string& token_suffix = {});
  // Warm capacity (actuator_warm.cc). A wake (LaunchAction::wake_instance_ids)
  // starts its stopped instances one by one, its intent naming them; what
  // does not start is launched cold from the action's fallbacks. On an Auto
  // Scaling group pool it is the group's launch (the group wakes its warm
  // pool first).
  std::vector<std::string> WakeOne(int64_t decision_id, size_t index, const LaunchAction& launch,
                                   const Policy& policy, OfferingAvailability& marks, BudgetGuard& budget,
                                   ActuationResult* result, TickReport* report);
  // The instances of a refill launch are warm capacity, not nodes.
  void KeepRefillsWarm(const std::vector<std::string>& ids, ActuationResult* result);
  // Cordons and stops the refills that are ready, and returns woken nodes
  // to service (NodeActions::warm_stops, warm_returns). A stopped node's
  // price in the store becomes its volumes' until it is woken.
  void StartWarmActions(const NodeActions& actions, WallTime now, ActuationResult* result, TickReport* report);
  // Sets the warm pool of each Auto Scaling group pool to the plan's size
  // (Plan::warm_targets) when it changed since the last call.
  void SetWarmPools(const Plan& plan, const Policy& policy, TickReport* report);
  // A termination of a warm node of the snapshot (retired from warm
  // capacity): terminated directly, nothing to drain. Not one: nothing.
  void TerminateWarm(int64_t decision_id, size_t index, const TerminationAction& term, const Snapshot& snapshot,
                     ActuationResult* result, TickReport* report);
  // A park (TerminationAction::park): the empty node goes into its pool's
  // warm capacity instead of away. With ClusterNodes it is drained first,
  // like any node leaving service, and stopped when the drain ends well
  // (FinishParking; kept otherwise); without, cordoned and stopped at once.
  // False when it could not be stopped (the caller terminates it as
  // planned before the park).
  struct Parking {
    Instance instance;  // as it will be listed: stopped
    WarmState state = WarmState::kStopped;
    double waiting_usd_per_hour = 0;  // its price in the store from the stop on
  };
  bool ParkOne(const Node& node, const TerminationAction& term, const Policy& policy, const Snapshot& snapshot,
               ActuationResult* result, TickReport* report);
  bool StopParked(const Parking& parking, ActuationResult* result, TickReport* report);
  // A drain that ended for a park: the node is stopped, or kept. False when
  // the drain was not a park's.
  bool FinishParking(const DrainOutcome& drain, ActuationResult* result, TickReport* report);
  // Recover's part for an open wake intent: starts its instances again.
  // False when the row is not a wake.
  bool RecoverWake(const ActionRow& row, ActuationResult* result, TickReport* report);
  void TerminateOne(int64_t decision_id, size_t index, const TerminationAction& term, const Snapshot& snapshot,
                    const Policy& policy, ActuationResult* result, TickReport* report);
  // Starts the drain of a terminate intent; false when the instance has no
  // node (terminate it directly). A drain that cannot start closes the intent.
  bool StartDrain(const DrainRequest& request, const std::string& pool, ActuationResult* result,
                  TickReport* report);
  // Records the node launches of an action and returns their instance ids;
  // the nodes start launching, or in their listed state (`listed_state`).
  std::vector<std::string> RecordLaunched(const std::vector<Instance>& instances, int64_t decision_id,
                                          const std::string& reason, bool listed_state,
                                          ActuationResult* result, TickReport* report);
  // Writes the intent before any call; false (with the error in the report)
  // when it could not be written. Without a store there is nothing to write.
  bool RecordIntent(const ActionRecord& intent, int64_t* action_id, TickReport* report);
  LaunchRequest RequestFor(const std::string& pool, int count, const std::string& token, const Policy& policy) const;

  const Clock& clock_;
  CloudProvider& cloud_;
  AuditStore* store_;
  const Catalog& catalog_;
  ActuatorOptions options_;
  ClusterNodes* nodes_ = nullptr;
  bool recovered_ = false;  // Recover read the open intents
  // Per Auto Scaling group: the warm pool size and state last set.
  std::map<std::string, std::pair<int, WarmState>> warm_pool_sizes_;
  // Nodes being drained to be parked, by instance id.
  std::map<std::string, Parking> parking_;
};

}  // namespace gpuscaler
