#include "gpuscaler/controller/actuator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gpuscaler/controller/failpoint.h"

namespace gpuscaler {
namespace {

std::string JoinErrors(const std::vector<OfferingError>& errors) {
  std::string out;
  for (const OfferingError& e : errors) {
    if (!out.empty()) out += "; ";
    out += e.offering_key + ": " + e.error.ToString();
  }
  return out;
}

ActionOutcome OutcomeOf(size_t made, int wanted) {
  if (made == 0) return ActionOutcome::kFailed;
  return static_cast<int>(made) >= wanted ? ActionOutcome::kSucceeded : ActionOutcome::kPartial;
}

void AddUnits(const std::vector<std::string>& ids, std::vector<std::string>* out) {
  out->insert(out->end(), ids.begin(), ids.end());
}

std::string Usd(double usd_per_hour) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "$%.2f/h", usd_per_hour);
  return buf;
}

}  // namespace

BudgetGuard::BudgetGuard(const Snapshot& snapshot, const Plan& plan, const Policy& policy) {
  std::set<std::string> leaving;
  for (const TerminationAction& t : plan.terminations) leaving.insert(t.instance_id.empty() ? t.node_id : t.instance_id);
  auto limit = [&](const BudgetCap& cap, double month_to_date) {
    if (!cap.hard) return std::numeric_limits<double>::infinity();
    return HourlyAllowanceUsd(cap, month_to_date, snapshot.hours_left_in_month);
  };
  global_.limit = limit(policy.budget.global, snapshot.month_to_date_usd);
  for (const auto& [pool, cap] : policy.budget.per_pool) {
    auto mtd = snapshot.month_to_date_usd_by_pool.find(pool);
    pools_[pool].limit = limit(cap, mtd == snapshot.month_to_date_usd_by_pool.end() ? 0.0 : mtd->second);
  }
  for (const Node& n : snapshot.nodes) {
    if (leaving.count(n.instance_id) != 0) continue;
    global_.spend += n.offering.usd_per_hour;
    auto it = pools_.find(n.pool);
    if (it != pools_.end()) it->second.spend += n.offering.usd_per_hour;
  }
}

std::string BudgetGuard::Breach(const std::string& pool, const Offering& offering, int count) const {
  const double add = offering.usd_per_hour * count;
  auto over = [&](const Cap& c, const std::string& which) -> std::string {
    if (c.spend + add <= c.limit + 1e-9) return "";
    return std::to_string(count) + " x " + offering.Key() + " (" + Usd(add) + ") would exceed the hard " + which +
           " budget (" + Usd(std::max(0.0, c.limit - c.spend)) + " left of " + Usd(c.limit) + ")";
  };
  std::string why = over(global_, "global");
  if (auto it = pools_.find(pool); why.empty() && it != pools_.end()) why = over(it->second, "pool " + pool);
  return why;
}

void BudgetGuard::Commit(const std::string& pool, double usd_per_hour) {
  global_.spend += usd_per_hour;
  if (auto it = pools_.find(pool); it != pools_.end()) it->second.spend += usd_per_hour;
}

NodeState NodeStateOf(InstanceState s) {
  switch (s) {
    case InstanceState::kPending:
      return NodeState::kLaunching;
    case InstanceState::kRunning:
      return NodeState::kReady;
    case InstanceState::kShuttingDown:
      return NodeState::kTerminating;
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
  if (const NodePoolPolicy* p = policy.FindPool(pool); p != nullptr && p->actuation == "asg") {
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
    return false;
  }
  *action_id = *id;
  return true;
}

ActuationResult Actuator::Act(int64_t decision_id, const Plan& plan, const Snapshot& snapshot,
                              const Policy& policy, OfferingAvailability& availability, TickReport* report) {
  ActuationResult result;
  BudgetGuard budget(snapshot, plan, policy);
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    if (plan.launches[i].count > 0)
      LaunchOne(decision_id, i, plan.launches[i], policy, availability, budget, &result, report);
  }
  for (size_t j = 0; j < plan.terminations.size(); ++j) {
    TerminateOne(decision_id, plan.launches.size() + j, plan.terminations[j], snapshot, &result, report);
  }
  return result;
}

void Actuator::LaunchOne(int64_t decision_id, size_t index, const LaunchAction& launch, const Policy& policy,
                         OfferingAvailability& availability, BudgetGuard& budget, ActuationResult* result,
                         TickReport* report) {
  const WallTime now = clock_.WallNow();
  report->nodes_requested += launch.count;
  LaunchRequest request =
      RequestFor(launch.pool, launch.count, options_.token_prefix + std::to_string(decision_id) + "-" + std::to_string(index), policy);
  std::set<std::string> keys;
  std::vector<std::string> over_budget;  // offerings not sent: they would break a hard budget
  auto consider = [&](const Offering& o) {
    if (launch.offering.capacity_type == CapacityType::kSpot && o.capacity_type == CapacityType::kOnDemand &&
        !policy.spot.fallback_to_on_demand)
      return;
    const std::string key = o.Key();
    if (!availability.IsAvailable(key, now) || !keys.insert(key).second) return;
    if (std::string why = budget.Breach(launch.pool, o, launch.count); !why.empty()) {
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
    return;
  }
  if (options_.dry_run) return;

  ActionRecord intent;
  intent.decision_id = decision_id;
  intent.kind = ActionKind::kLaunch;
  intent.idempotency_token = request.idempotency_token;
  intent.pool = launch.pool;
  intent.offering = request.offerings.empty() ? launch.offering : request.offerings.front();
  intent.count = launch.count;
  intent.reason = held.empty() ? launch.reason : launch.reason + "; " + held;
  int64_t action_id = 0;
  if (!RecordIntent(intent, &action_id, report)) return;
  if (request.offerings.empty()) {
    // Every offering would break a hard budget: the action is recorded, with
    // why, and never sent.
    if (store_ != nullptr) report->Record(store_->RecordActionOutcome(action_id, ActionOutcome::kFailed, held, {}));
    return;
  }

  failpoint::Check("launch.before_call");
  Result<LaunchResult> launched = cloud_.Launch(request);
  failpoint::Check("launch.after_call");
  if (!launched) {
    report->errors.push_back(launched.error().WithContext("launch"));
    if (launched.error().category() == ErrorCategory::kCapacity) {
      bool spot = false;
      for (const Offering& o : request.offerings) {
        availability.RecordCapacityError(o.Key(), now);
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
    return;
  }
  bool spot_short = false;
  for (const OfferingError& e : launched->errors) {
    if (e.error.category() == ErrorCategory::kCapacity) {
      availability.RecordCapacityError(e.offering_key, now);
      ++report->capacity_errors;
      spot_short |= e.offering_key.ends_with("/spot");
    }
  }
  if (spot_short) AddUnits(launch.unit_ids, &result->spot_capacity_error_units);
  std::set<std::string> succeeded;
  for (const Instance& inst : launched->instances) {
    if (succeeded.insert(inst.offering.Key()).second) availability.RecordSuccess(inst.offering.Key());
  }
  std::map<std::string, int> launched_by_offering;
  for (const Instance& inst : launched->instances) {
    budget.Commit(launch.pool, inst.offering.usd_per_hour);
    ++launched_by_offering[inst.offering.Key()];
  }
  const std::vector<std::string> ids =
      RecordLaunched(launched->instances, decision_id, launch.reason, false, result, report);
  report->nodes_launched += static_cast<int>(ids.size());
  if (!ids.empty()) result->scaled_up_pools.insert(launch.pool);
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
    report->Record(store_->RecordActionOutcome(action_id, OutcomeOf(ids.size(), launch.count), detail, ids));
    failpoint::Check("launch.after_outcome");
  }
}

void Actuator::TerminateOne(int64_t decision_id, size_t index, const TerminationAction& term,
                            const Snapshot& snapshot, ActuationResult* result, TickReport* report) {
  const std::string& wanted = term.instance_id.empty() ? term.node_id : term.instance_id;
  auto node_it = std::find_if(snapshot.nodes.begin(), snapshot.nodes.end(),
                              [&](const Node& n) { return n.instance_id == wanted; });
  if (node_it == snapshot.nodes.end()) {
    node_it = std::find_if(snapshot.nodes.begin(), snapshot.nodes.end(),
                           [&](const Node& n) { return n.id == term.node_id; });
  }
  if (node_it == snapshot.nodes.end()) return;
  const Node& node = *node_it;
  if (node.do_not_disrupt || options_.dry_run) return;
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
    return;
  }
  result->ended.push_back(
      {instance_id, term.kind == TerminationKind::kConsolidate ? "consolidated" : "terminated"});
  result->scaled_down_pools.insert(node.pool);
  ++report->nodes_terminated;
}

bool Actuator::Recover(const Policy& policy, ActuationResult* result, TickReport* report) {
  if (store_ == nullptr || options_.dry_run) return true;
  Result<std::vector<ActionRow>> open = store_->OpenIntents();
  if (!open) {
    report->errors.push_back(open.error().WithContext("reading open intents"));
    return false;
  }
  const WallTime now = clock_.WallNow();
  // A launch's fallback runs (other capacity type) have their own ClientToken
  // and are not part of the replay below, which sends the chosen offering
  // only: their instances are found by the intent tag instead, so the action
  // row lists every instance the launch made.
  std::map<std::string, std::vector<Instance>> tagged;
  if (std::any_of(open->begin(), open->end(),
                  [](const ActionRow& r) { return r.action.kind == ActionKind::kLaunch; })) {
    Result<std::vector<Instance>> listed = cloud_.ListInstances();
    if (listed) {
      for (Instance& inst : *listed) {
        auto tag = inst.tags.find(kIntentTag);
        if (tag != inst.tags.end()) tagged[tag->second].push_back(std::move(inst));
      }
    } else {
      report->errors.push_back(listed.error().WithContext("listing instances for open intents"));
    }
  }
  for (const ActionRow& row : *open) {
    const ActionRecord& a = row.action;
    if (a.kind == ActionKind::kTerminate) {
      Status s = cloud_.Terminate(a.instance_ids);
      failpoint::Check("recover.terminate.after_call");
      report->Record(store_->RecordActionOutcome(row.id,
                                                 s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
                                                 s.ok() ? "completed after a restart" : s.error().ToString(),
                                                 s.ok() ? a.instance_ids : std::vector<std::string>{}));
      if (s.ok()) {
        result->terminated_elsewhere.insert(result->terminated_elsewhere.end(), a.instance_ids.begin(),
                                            a.instance_ids.end());
      }
      continue;
    }
    if (!row.decision_time || now - *row.decision_time > options_.intent_replay_window) {
      // Too old to send again (the cloud forgets tokens), but what it made
      // carries its intent tag: the row still lists the launch's instances.
      const std::vector<std::string> ids =
          RecordLaunched(tagged[a.idempotency_token], a.decision_id, a.reason,
                         /*listed_state=*/true, result, report);
      report->Record(store_->RecordActionOutcome(
          row.id, OutcomeOf(ids.size(), a.count),
          ids.empty() ? "abandoned after a restart: older than the replay window, "
                        "and no instance carries its intent tag"
                      : "closed after a restart (older than the replay window): "
                        "instances found by their intent tag",
          ids));
      continue;
    }
    LaunchRequest request = RequestFor(a.pool, a.count, a.idempotency_token, policy);
    request.offerings = {a.offering};
    Result<LaunchResult> replayed = cloud_.Launch(request);
    failpoint::Check("recover.launch.after_call");
    if (!replayed) {
      // Not recorded as failed: the next start tries again within the window.
      report->errors.push_back(
          replayed.error().WithContext("replaying launch intent " + a.idempotency_token));
      continue;
    }
    std::set<std::string> seen;
    for (const Instance& inst : replayed->instances) seen.insert(inst.instance_id);
    for (const Instance& inst : tagged[a.idempotency_token]) {
      if (seen.insert(inst.instance_id).second) replayed->instances.push_back(inst);
    }
    const std::vector<std::string> ids =
        RecordLaunched(replayed->instances, a.decision_id, a.reason, false, result, report);
    report->nodes_launched += static_cast<int>(ids.size());
    report->Record(store_->RecordActionOutcome(row.id, OutcomeOf(ids.size(), a.count),
                                               "completed after a restart " + JoinErrors(replayed->errors),
                                               ids));
    result->failed = true;
  }
  return true;
}

}  // namespace gpuscaler
