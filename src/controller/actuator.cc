#include "gpuscaler/controller/actuator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "actuator_internal.h"
#include "gpuscaler/controller/failpoint.h"
#include "gpuscaler/model/money.h"
#include "gpuscaler/solver/warm_pool.h"

namespace gpuscaler {
namespace {

using actuator_internal::AddUnits;
using actuator_internal::JoinErrors;
using actuator_internal::OutcomeOf;

std::string Usd(double usd_per_hour) { return FormatUsd(usd_per_hour, MoneyStyle::kCentsPerHour); }

// An offering's GPUs (0 for a type without GPUs or not in the snapshot).
int GpuCountOf(const Snapshot& snapshot, const Offering& offering) {
  for (const InstanceType& t : snapshot.instance_types)
    if (t.name == offering.instance_type) return t.gpu_count;
  return 0;
}

// An offering's price per GPU: what a unit placed on a new node of it (not
// oversubscribed) is charged per GPU.
double PricePerGpu(const Snapshot& snapshot, const Offering& offering) {
  return gpuscaler::PricePerGpu(offering.usd_per_hour, GpuCountOf(snapshot, offering));
}

}  // namespace

BudgetGuard::BudgetGuard(const Snapshot& snapshot, const Plan& plan, const Policy& policy)
    : snapshot_(snapshot) {
  std::set<std::string> leaving;
  for (const TerminationAction& t : plan.terminations) leaving.insert(t.instance_id.empty() ? t.node_id : t.instance_id);
  auto limit = [&](const BudgetCap& cap, const std::map<std::string, double>& spent, const std::string& name) {
    if (!cap.hard) return std::numeric_limits<double>::infinity();
    auto mtd = spent.find(name);
    return HourlyAllowanceUsd(cap, mtd == spent.end() ? 0.0 : mtd->second, snapshot.hours_left_in_month);
  };
  global_.limit = policy.budget.global.hard ? HourlyAllowanceUsd(policy.budget.global, snapshot.month_to_date_usd,
                                                                  snapshot.hours_left_in_month)
                                            : std::numeric_limits<double>::infinity();
  for (const auto& [pool, cap] : policy.budget.per_pool)
    pools_[pool].limit = limit(cap, snapshot.month_to_date_usd_by_pool, pool);
  for (const auto& [team, cap] : policy.budget.per_team)
    teams_[team].limit = limit(cap, snapshot.month_to_date_usd_by_team, team);
  for (const Node& n : snapshot.nodes) {
    if (leaving.count(n.instance_id) != 0) continue;
    global_.spend += n.offering.usd_per_hour;
    auto it = pools_.find(n.pool);
    if (it != pools_.end()) it->second.spend += n.offering.usd_per_hour;
    if (teams_.empty()) continue;
    std::vector<GpuHolding> holdings;
    holdings.reserve(n.running.size());
    for (const DemandUnit& u : n.running) holdings.push_back({u.workload_class, TeamOf(u, policy), GpuShare(u)});
    const NodePriceSplit split = SplitNodePrice(n.offering.usd_per_hour, GpuCountOf(snapshot, n.offering), holdings);
    for (size_t i = 0; i < holdings.size(); ++i) {
      auto team = teams_.find(TeamOf(n.running[i], policy));
      if (team != teams_.end()) team->second.spend += split.usd[i];
    }
  }
  if (teams_.empty()) return;
  for (const DemandUnit& u : snapshot.pending) {
    const std::string& team = TeamOf(u, policy);
    if (teams_.count(team) != 0) pending_by_id_[u.id] = {team, GpuShare(u)};
  }
}

std::map<std::string, double> BudgetGuard::TeamCharges(const LaunchAction& launch, const Offering& offering,
                                                       int count) const {
  std::map<std::string, double> charges;
  if (teams_.empty() || launch.count <= 0) return charges;
  const double per_gpu = PricePerGpu(snapshot_, offering);
  for (const std::string& id : launch.unit_ids) {
    auto it = pending_by_id_.find(id);
    if (it != pending_by_id_.end()) charges[it->second.team] += it->second.gpus * per_gpu * count / launch.count;
  }
  return charges;
}

std::string BudgetGuard::Breach(const LaunchAction& launch, const Offering& offering, int count) const {
  const double add = offering.usd_per_hour * count;
  auto over = [&](const Cap& c, double charge, const std::string& which) -> std::string {
    if (c.spend + charge <= c.limit + 1e-9) return "";
    return std::to_string(count) + " x " + offering.Key() + " (" + Usd(charge) + ") would exceed the hard " + which +
           " budget (" + Usd(std::max(0.0, c.limit - c.spend)) + " left of " + Usd(c.limit) + ")";
  };
  std::string why = over(global_, add, "global");
  if (auto it = pools_.find(launch.pool); why.empty() && it != pools_.end())
    why = over(it->second, add, "pool " + launch.pool);
  for (const auto& [team, charge] : TeamCharges(launch, offering, count)) {
    if (why.empty()) why = over(teams_.at(team), charge, "team " + team);
  }
  return why;
}

void BudgetGuard::Commit(const LaunchAction& launch, const Offering& offering) {
  global_.spend += offering.usd_per_hour;
  if (auto it = pools_.find(launch.pool); it != pools_.end()) it->second.spend += offering.usd_per_hour;
  for (const auto& [team, charge] : TeamCharges(launch, offering, 1)) teams_[team].spend += charge;
}

NodeState NodeStateOf(InstanceState s) {
  switch (s) {
    case InstanceState::kPending:
      return NodeState::kLaunching;
    case InstanceState::kRunning:
      return NodeState::kReady;
    case InstanceState::kShuttingDown:
      return NodeState::kTerminating;
    case InstanceState::kStopped:  // a warm node: takes no work until woken
      return NodeState::kCordoned;
  }
  return NodeState::kReady;
}

Actuator::Actuator(const Clock& clock, CloudProvider& cloud, AuditStore* store, const Catalog& catalog,
                   ActuatorOptions options)
    : clock_(clock), cloud_(cloud), store_(store), catalog_(catalog), options_(std::move(options)) {}

LaunchRequest Actuator::RequestFor(const std::string& pool, int count, const std::string& token,
                                   const Policy& policy) const {
  LaunchRequest request;
  request.pool = pool;
  if (const NodePoolPolicy* p = policy.FindPool(pool); p != nullptr && p->actuation == Actuation::kAsg) {
    request.auto_scaling_group = p->auto_scaling_group;
  } else if (p != nullptr && p->node_template) {
    request.node_template = p->node_template;
    request.node_labels = p->labels;
    request.node_taints = p->taints;
  }
  request.count = count;
  request.tags = options_.tags;
  request.tags[kOwnerTag] = pool;
  request.tags[kIntentTag] = token;
  request.idempotency_token = token;
  return request;
}

std::vector<std::string> Actuator::RecordLaunched(const std::vector<Instance>& instances, int64_t decision_id,
                                                  const std::string& reason, bool listed_state,
                                                  ActuationResult* result, TickReport* report) {
  std::vector<std::string> ids;
  for (const Instance& inst : instances) {
    ids.push_back(inst.instance_id);
    result->launched.push_back({inst, listed_state ? NodeStateOf(inst.state) : NodeState::kLaunching});
    if (store_ == nullptr) continue;
    NodeLaunchRecord rec{inst.instance_id, inst.instance_id, inst.pool, inst.offering, 0,
                         inst.launch_time, decision_id,      reason};
    if (const InstanceType* t = catalog_.FindInstanceType(inst.offering.instance_type))
      rec.gpu_count = t->gpu_count;
    report->Record(store_->RecordNodeLaunch(rec));
  }
  return ids;
}

bool Actuator::RecordIntent(const ActionRecord& intent, int64_t* action_id, TickReport* report) {
  if (store_ == nullptr) return true;
  Result<int64_t> id = store_->RecordActionIntent(intent);
  if (!id) {
    // Never call the cloud without a durable intent: a crash could act twice.
    report->errors.push_back(
        id.error().WithContext(intent.kind == ActionKind::kLaunch ? "launch intent" : "terminate intent"));
    if (intent.kind != ActionKind::kLaunch) ++report->terminations_failed;
    return false;
  }
  *action_id = *id;
  return true;
}

ActuationResult Actuator::Act(int64_t decision_id, const Plan& plan, const Snapshot& snapshot,
                              const Policy& policy, const OfferingAvailability& availability, TickReport* report) {
  ActuationResult result;
  BudgetGuard budget(snapshot, plan, policy);
  OfferingAvailability marks = availability;
  std::vector<std::vector<std::string>> launched(plan.launches.size());
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const LaunchAction& l = plan.launches[i];
    if (l.count <= 0) continue;
    if (!l.wake_instance_ids.empty()) {
      launched[i] = WakeOne(decision_id, i, l, policy, marks, budget, &result, report);
      continue;
    }
    // A refill adds no running capacity: it starts no scale-up cooldown.
    const bool scaled_up_before = result.scaled_up_pools.count(l.pool) != 0;
    launched[i] = LaunchOne(decision_id, i, l, policy, marks, budget, &result, report);
    if (!l.into_warm) continue;
    KeepRefillsWarm(launched[i], &result);
    if (!scaled_up_before) result.scaled_up_pools.erase(l.pool);
  }
  SetWarmPools(plan, policy, report);
  for (size_t j = 0; j < plan.terminations.size(); ++j) {
    const TerminationAction& term = plan.terminations[j];
    const size_t index = plan.launches.size() + j;
    if (term.kind != TerminationKind::kReplace || options_.dry_run) {
      TerminateOne(decision_id, index, term, snapshot, policy, &result, report);
      continue;
    }
    // The old node stays until its replacement can take its work.
    std::set<std::string> ids;
    for (const Placement& p : plan.placements) {
      if (p.launch_index < 0 || static_cast<size_t>(p.launch_index) >= launched.size()) continue;
      if (std::find(term.moved_unit_ids.begin(), term.moved_unit_ids.end(), p.unit_id) == term.moved_unit_ids.end())
        continue;
      ids.insert(launched[static_cast<size_t>(p.launch_index)].begin(), launched[static_cast<size_t>(p.launch_index)].end());
    }
    if (ids.empty()) {
      report->governor.notes.push_back((term.instance_id.empty() ? term.node_id : term.instance_id) +
                                       ": replacement not launched; the node is kept");
      result.failed = true;
      continue;
    }
    result.replacements.push_back({term, decision_id, index, {ids.begin(), ids.end()}, clock_.WallNow()});
  }
  return result;
}

void Actuator::FinishReplacement(const PendingReplacement& replacement, const Snapshot& snapshot,
                                 const Policy& policy, ActuationResult* result, TickReport* report) {
  TerminateOne(replacement.decision_id, replacement.action_index, replacement.termination, snapshot, policy, result,
               report);
}

std::vector<std::string> Actuator::LaunchOne(int64_t decision_id, size_t index, const LaunchAction& launch,
                                             const Policy& policy, OfferingAvailability& marks,
                                             BudgetGuard& budget, ActuationResult* result, TickReport* report,
                                             const std::string& token_suffix) {
  const WallTime now = clock_.WallNow();
  report->nodes_requested += launch.count;
  LaunchRequest request = RequestFor(
      launch.pool, launch.count,
      options_.token_prefix + std::to_string(decision_id) + "-" + std::to_string(index) + token_suffix, policy);
  // A refill is tagged as one; its node is cordoned as soon as it registers
  // (WarmCapacity), before its GPUs are allocatable.
  if (launch.into_warm) request.tags[kWarmTag] = "refill";
  // In a pool with spot warm capacity a spot node is launched stoppable,
  // stopped rather than ended when reclaimed (solver/warm_pool.h): a refill
  // must be, and an empty node can then be stopped into the pool instead
  // of a refill's cold boot.
  if (const NodePoolPolicy* p = policy.FindPool(launch.pool);
      p != nullptr && p->warm && p->warm->capacity_type != WarmCapacityType::kOnDemand &&
      launch.offering.capacity_type == CapacityType::kSpot)
    request.tags[kWarmInterruptionTag] = "stop";
  request.all_or_nothing = launch.all_or_nothing;
  // Only gangs: a placement group's one zone and tight capacity gain a lone node nothing.
  if (const NodePoolPolicy* p = policy.FindPool(launch.pool); p != nullptr && launch.all_or_nothing)
    request.placement_group = p->placement_group;
  for (const auto& [key, value] : launch.node_labels) {
    request.tags.try_emplace(key, value);  // never the owner or intent tag
    if (request.node_template) request.node_labels[key] = value;
  }
  std::set<std::string> keys;
  std::vector<std::string> over_budget;  // offerings not sent: they would break a hard budget
  auto consider = [&](const Offering& o) {
    if (launch.offering.capacity_type == CapacityType::kSpot && o.capacity_type == CapacityType::kOnDemand &&
        !policy.spot.fallback_to_on_demand)
      return;
    const std::string key = o.Key();
    if (!marks.IsAvailable(key, now) || !keys.insert(key).second) return;
    if (std::string why = budget.Breach(launch, o, launch.count); !why.empty()) {
      over_budget.push_back(std::move(why));
      return;
    }
    request.offerings.push_back(o);
  };
  consider(launch.offering);
  for (const Offering& o : launch.fallbacks) consider(o);
  std::string held;
  for (const std::string& why : over_budget) held += (held.empty() ? "not sent: " : "; ") + why;
  if (!held.empty()) report->governor.notes.push_back("launch " + std::to_string(index) + ": " + held);
  if (request.offerings.empty() && over_budget.empty()) {
    report->governor.notes.push_back("launch " + std::to_string(index) +
                                     ": every offering is marked unavailable");
    return {};
  }
  if (options_.dry_run) return {};

  ActionRecord intent;
  intent.decision_id = decision_id;
  intent.kind = ActionKind::kLaunch;
  intent.idempotency_token = request.idempotency_token;
  intent.pool = launch.pool;
  intent.offering = request.offerings.empty() ? launch.offering : request.offerings.front();
  intent.count = launch.count;
  intent.reason = held.empty() ? launch.reason : launch.reason + "; " + held;
  int64_t action_id = 0;
  if (!RecordIntent(intent, &action_id, report)) return {};
  if (request.offerings.empty()) {
    // Every offering would break a hard budget: the action is recorded, with
    // why, and never sent.
    if (store_ != nullptr) report->Record(store_->RecordActionOutcome(action_id, ActionOutcome::kFailed, held, {}));
    return {};
  }

  failpoint::Check("launch.before_call");
  Result<LaunchResult> launched = cloud_.Launch(request);
  failpoint::Check("launch.after_call");
  if (!launched) {
    report->errors.push_back(launched.error().WithContext("launch"));
    if (launched.error().category() == ErrorCategory::kCapacity) {
      bool spot = false;
      for (const Offering& o : request.offerings) {
        marks.RecordCapacityError(o.Key(), now);
        result->availability_events.push_back({o.Key(), now, true});
        spot |= o.capacity_type == CapacityType::kSpot;
      }
      ++report->capacity_errors;
      if (spot) AddUnits(launch.unit_ids, &result->spot_capacity_error_units);
    }
    if (store_ != nullptr) {
      report->Record(
          store_->RecordActionOutcome(action_id, ActionOutcome::kFailed, launched.error().ToString(), {}));
    }
    result->failed = true;
    return {};
  }
  bool spot_short = false;
  for (const OfferingError& e : launched->errors) {
    if (e.error.category() == ErrorCategory::kCapacity) {
      marks.RecordCapacityError(e.offering_key, now);
      result->availability_events.push_back({e.offering_key, now, true});
      ++report->capacity_errors;
      spot_short |= e.offering_key.ends_with("/spot");
    }
  }
  // A spot offering without capacity pauses spot for the launch's classes
  // only when the launch did not get its nodes on spot elsewhere: a spot
  // fallback that filled the launch is the market working, not a shortage.
  if (spot_short) {
    int spot_launched = 0;
    for (const Instance& inst : launched->instances) {
      if (inst.offering.capacity_type == CapacityType::kSpot) ++spot_launched;
    }
    if (spot_launched < launch.count) AddUnits(launch.unit_ids, &result->spot_capacity_error_units);
  }
  std::set<std::string> succeeded;
  for (const Instance& inst : launched->instances) {
    if (!succeeded.insert(inst.offering.Key()).second) continue;
    marks.RecordSuccess(inst.offering.Key());
    result->availability_events.push_back({inst.offering.Key(), now, false});
  }
  std::map<std::string, int> launched_by_offering;
  for (const Instance& inst : launched->instances) {
    budget.Commit(launch, inst.offering);
    ++launched_by_offering[inst.offering.Key()];
  }
  const std::vector<std::string> ids =
      RecordLaunched(launched->instances, decision_id, launch.reason, false, result, report);
  report->nodes_launched += static_cast<int>(ids.size());
  // Accepted but not listed yet: no offering said why it fell short, so the
  // rest is on its way (an Auto Scaling group lists its new instances
  // later). It is coming capacity, not a failure to plan again.
  const int in_flight = launched->errors.empty() ? launch.count - static_cast<int>(ids.size()) : 0;
  if (in_flight > 0) {
    result->in_flight.push_back({request.idempotency_token, launch.pool, request.offerings.front(), in_flight,
                                 decision_id, launch.reason, now});
    report->nodes_in_flight += in_flight;
  }
  if (!ids.empty() || in_flight > 0) result->scaled_up_pools.insert(launch.pool);
  if (!launched->errors.empty()) result->failed = true;
  if (store_ != nullptr) {
    // The row names what was bought, so a fallback is visible next to the
    // offering the intent chose.
    std::string detail;
    for (const auto& [key, n] : launched_by_offering) {
      detail += (detail.empty() ? "launched " : ", ") + std::to_string(n) + " x " + key;
    }
    if (const std::string errors = JoinErrors(launched->errors); !errors.empty()) {
      detail += (detail.empty() ? "" : "; ") + errors;
    }
    if (!held.empty()) detail += (detail.empty() ? "" : "; ") + held;
    if (in_flight > 0) {
      detail += (detail.empty() ? "" : "; ") + std::string("accepted: ") + std::to_string(in_flight) +
                " instance(s) not listed yet (awaited until the pool's registration_timeout)";
    }
    report->Record(store_->RecordActionOutcome(
        action_id, OutcomeOf(ids.size() + static_cast<size_t>(in_flight), launch.count), detail, ids));
    failpoint::Check("launch.after_outcome");
  }
  return ids;
}

void Actuator::TerminateOne(int64_t decision_id, size_t index, const TerminationAction& term,
                            const Snapshot& snapshot, const Policy& policy, ActuationResult* result,
                            TickReport* report) {
  const std::string& wanted = term.instance_id.empty() ? term.node_id : term.instance_id;
  auto node_it = std::find_if(snapshot.nodes.begin(), snapshot.nodes.end(),
                              [&](const Node& n) { return n.instance_id == wanted; });
  if (node_it == snapshot.nodes.end()) {
    node_it = std::find_if(snapshot.nodes.begin(), snapshot.nodes.end(),
                           [&](const Node& n) { return n.id == term.node_id; });
  }
  if (node_it == snapshot.nodes.end()) {
    TerminateWarm(decision_id, index, term, snapshot, result, report);
    return;
  }
  const Node& node = *node_it;
  if (node.do_not_disrupt || options_.dry_run) return;
  if (term.park && ParkOne(node, term, policy, snapshot, result, report)) return;
  const std::string instance_id = node.instance_id;
  // A plan that names a node twice terminates it once.
  for (const EndedNode& e : result->ended) {
    if (e.instance_id == instance_id) return;
  }
  ActionRecord intent;
  intent.decision_id = decision_id;
  intent.kind = ActionKind::kTerminate;
  intent.idempotency_token = options_.token_prefix + std::to_string(decision_id) + "-" + std::to_string(index);
  intent.pool = node.pool;
  intent.offering = node.offering;
  intent.count = 1;
  intent.instance_ids = {instance_id};
  intent.reason = term.reason;
  int64_t action_id = 0;
  if (!RecordIntent(intent, &action_id, report)) return;
  const std::string cause = term.kind == TerminationKind::kConsolidate ? "consolidated" : "terminated";
  // Only a Ready node is drained (or one held for its replacement): the
  // others have no pods to move or no kubelet to move them (repairs,
  // registration timeouts).
  if (nodes_ != nullptr && (node.state == NodeState::kReady || node.state == NodeState::kCordoned ||
                          node.state == NodeState::kHeldForReplacement)) {
    const DrainRequest drain{instance_id, action_id, term.reason, cause, policy.disruption.drain_timeout,
                             policy.disruption.do_not_disrupt_labels};
    if (StartDrain(drain, node.pool, result, report)) return;
  }
  failpoint::Check("terminate.before_call");
  Status s = cloud_.Terminate({instance_id});
  failpoint::Check("terminate.after_call");
  if (store_ != nullptr) {
    report->Record(store_->RecordActionOutcome(
        action_id, s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
        s.ok() ? "" : s.error().ToString(),
        s.ok() ? std::vector<std::string>{instance_id} : std::vector<std::string>{}));
    failpoint::Check("terminate.after_outcome");
  }
  if (!s.ok()) {
    report->errors.push_back(s.error().WithContext("terminate " + instance_id));
    ++report->terminations_failed;
    return;
  }
  result->ended.push_back({instance_id, cause});
  result->scaled_down_pools.insert(node.pool);
  ++report->nodes_terminated;
}

bool Actuator::StartDrain(const DrainRequest& request, const std::string& pool, ActuationResult* result,
                          TickReport* report) {
  Status s = nodes_->BeginDrain(request);
  if (s.ok()) {
    result->draining.push_back(request.instance_id);
    if (!pool.empty()) result->scaled_down_pools.insert(pool);
    ++report->drains_started;
    return true;
  }
  if (s.error().category() == ErrorCategory::kNotFound) return false;
  report->errors.push_back(s.error().WithContext("drain " + request.instance_id));
  if (store_ != nullptr && request.action_id != 0) {
    report->Record(store_->RecordActionOutcome(request.action_id, ActionOutcome::kFailed,
                                               "drain not started: " + s.error().ToString(), {}));
  }
  result->failed = true;
  return true;
}

void Actuator::StartNodeActions(const NodeActions& actions, WallTime now, ActuationResult* result,
                                TickReport* report) {
  StartWarmActions(actions, now, result, report);
  if (nodes_ == nullptr) return;
  for (const NodeActions::Drain& d : actions.drains) {
    DrainRequest drain;
    drain.instance_id = d.instance_id;
    drain.reason = "spot interruption notice: the instance goes away at " + FormatRfc3339(d.deadline);
    drain.cause = "interrupted";
    drain.timeout = std::max(Seconds(1), std::chrono::duration_cast<Seconds>(d.deadline - now));
    Status s = nodes_->BeginDrain(drain);
    if (s.ok()) {
      result->draining.push_back(d.instance_id);
      ++report->drains_started;
    } else if (s.error().category() != ErrorCategory::kNotFound) {
      report->errors.push_back(s.error().WithContext("draining interrupted node " + d.instance_id));
    }
  }
  for (const std::string& id : actions.cordons) {
    Status s = nodes_->Cordon(id, true);
    if (!s.ok() && s.error().category() != ErrorCategory::kNotFound)
      report->errors.push_back(s.error().WithContext("cordoning rebalanced node " + id));
  }
}

void Actuator::FinishEndedDrains(ActuationResult* result, TickReport* report) {
  if (nodes_ == nullptr) return;
  for (const DrainOutcome& d : nodes_->TakeEndedDrains()) {
    report->drains_ended.push_back(d);
    if (FinishParking(d, result, report)) continue;
    const std::string& id = d.request.instance_id;
    Status s = d.end == DrainEnd::kDrained
                   ? cloud_.Terminate({id})
                   : Status(Error::Transient("drain " + std::string(ToString(d.end)) + ": " + d.detail));
    if (store_ != nullptr && d.request.action_id != 0) {
      report->Record(store_->RecordActionOutcome(
          d.request.action_id, s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
          s.ok() ? "drained (" + std::to_string(d.evicted) + " pod(s) evicted), then terminated" : s.error().ToString(),
          s.ok() ? std::vector<std::string>{id} : std::vector<std::string>{}));
    }
    if (!s.ok()) {
      if (d.end == DrainEnd::kDrained) {
        report->errors.push_back(s.error().WithContext("terminate " + id));
        ++report->terminations_failed;
      }
      result->kept.push_back(id);
      result->failed = true;
      continue;
    }
    result->ended.push_back({id, d.request.cause.empty() ? "terminated" : d.request.cause});
    ++report->nodes_terminated;
  }
}

}  // namespace gpuscaler
