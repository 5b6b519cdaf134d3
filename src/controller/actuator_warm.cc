// The actuator's warm capacity (pools[].warm): wakes, refills, stops, and
// the warm pools of Auto Scaling groups. Contract in actuator.h.
#include <algorithm>

#include "actuator_internal.h"
#include "gpuscaler/controller/actuator.h"
#include "gpuscaler/controller/failpoint.h"
#include "gpuscaler/solver/warm_pool.h"

namespace gpuscaler {
namespace {

// A started warm instance, as the cluster state adds it: a node on its way.
LaunchedNode WokenNode(const std::string& id, const std::string& pool, const Offering& offering, WallTime now) {
  Instance inst;
  inst.instance_id = id;
  inst.pool = pool;
  inst.offering = offering;
  inst.launch_time = now;
  inst.state = InstanceState::kPending;
  // Only a spot instance launched to stop on interruption can be stopped,
  // so a spot warm node is one: it can be parked again once empty.
  if (offering.capacity_type == CapacityType::kSpot) inst.tags[kWarmInterruptionTag] = "stop";
  return {inst, NodeState::kLaunching};
}

}  // namespace

std::vector<std::string> Actuator::WakeOne(int64_t decision_id, size_t index, const LaunchAction& launch,
                                           const Policy& policy, OfferingAvailability& marks, BudgetGuard& budget,
                                           ActuationResult* result, TickReport* report) {
  const NodePoolPolicy* pool = policy.FindPool(launch.pool);
  if (pool != nullptr && pool->actuation == Actuation::kAsg) {
    // The group starts its own warm instances first when its desired
    // capacity rises: a wake is its launch.
    LaunchAction raise = launch;
    raise.wake_instance_ids.clear();
    return LaunchOne(decision_id, index, raise, policy, marks, budget, result, report);
  }
  const WallTime now = clock_.WallNow();
  report->nodes_requested += launch.count;
  if (options_.dry_run) return {};
  ActionRecord intent;
  intent.decision_id = decision_id;
  intent.kind = ActionKind::kLaunch;
  intent.idempotency_token = options_.token_prefix + std::to_string(decision_id) + "-" + std::to_string(index);
  intent.pool = launch.pool;
  intent.offering = launch.offering;
  intent.count = launch.count;
  // A launch intent that names its instances is a wake: a restart that
  // finds it open starts them again (idempotent), never launches.
  intent.instance_ids = launch.wake_instance_ids;
  intent.reason = launch.reason;
  int64_t action_id = 0;
  if (!RecordIntent(intent, &action_id, report)) return {};
  std::vector<std::string> started;
  std::string errors;
  for (const std::string& id : launch.wake_instance_ids) {
    failpoint::Check("wake.before_call");
    Status s = cloud_.Start({id});
    if (!s.ok()) {
      report->errors.push_back(s.error().WithContext("wake " + id));
      errors += (errors.empty() ? "" : "; ") + id + ": " + s.error().ToString();
      if (s.error().category() == ErrorCategory::kCapacity) {
        marks.RecordCapacityError(launch.offering.Key(), now);
        result->availability_events.push_back({launch.offering.Key(), now, true});
        ++report->capacity_errors;
      }
      continue;
    }
    started.push_back(id);
  }
  for (const std::string& id : started) {
    result->launched.push_back(WokenNode(id, launch.pool, launch.offering, now));
    result->woken.push_back(id);
    budget.Commit(launch, launch.offering);
    if (store_ != nullptr) {
      // Its node row runs from its first launch to its end; a stopped spell
      // is billed at its volumes' price (StartWarmActions), and from now on
      // at the offering's again.
      NodeLaunchRecord rec{id, id, launch.pool, launch.offering, 0, now, decision_id, launch.reason};
      if (const InstanceType* t = catalog_.FindInstanceType(launch.offering.instance_type)) rec.gpu_count = t->gpu_count;
      report->Record(store_->RecordNodeLaunch(rec));
      report->Record(store_->RecordNodePrice(id, now, launch.offering.usd_per_hour));
    }
  }
  report->nodes_launched += static_cast<int>(started.size());
  if (!started.empty()) result->scaled_up_pools.insert(launch.pool);
  if (store_ != nullptr) {
    std::string detail = "woken " + std::to_string(started.size()) + " of " + std::to_string(launch.count);
    if (!errors.empty()) detail += "; " + errors;
    report->Record(store_->RecordActionOutcome(action_id, actuator_internal::OutcomeOf(started.size(), launch.count),
                                               detail, started));
  }
  const int missing = launch.count - static_cast<int>(started.size());
  if (missing <= 0 || launch.fallbacks.empty()) {
    if (missing > 0) result->failed = true;
    return started;
  }
  // What could not be woken is launched cold, as the plan's fallbacks say.
  result->failed = true;
  LaunchAction cold = launch;
  cold.wake_instance_ids.clear();
  cold.count = missing;
  cold.offering = launch.fallbacks.front();
  cold.fallbacks.erase(cold.fallbacks.begin());
  cold.reason = launch.reason + "; " + std::to_string(missing) + " not woken, launched cold";
  std::vector<std::string> launched =
      LaunchOne(decision_id, index, cold, policy, marks, budget, result, report, "-cold");
  started.insert(started.end(), launched.begin(), launched.end());
  return started;
}

void Actuator::KeepRefillsWarm(const std::vector<std::string>& ids, ActuationResult* result) {
  for (const std::string& id : ids) {
    auto it = std::find_if(result->launched.begin(), result->launched.end(),
                           [&](const LaunchedNode& l) { return l.instance.instance_id == id; });
    if (it == result->launched.end()) continue;
    result->warm_filling.push_back(it->instance);
    result->launched.erase(it);
  }
}

void Actuator::StartWarmActions(const NodeActions& actions, WallTime now, ActuationResult* result,
                                TickReport* report) {
  for (const NodeActions::WarmStop& stop : actions.warm_stops) {
    if (options_.dry_run) break;
    if (nodes_ != nullptr) {
      Status s = nodes_->SetWarm(stop.instance_id, true);
      if (!s.ok() && s.error().category() != ErrorCategory::kNotFound) {
        // Stopping a node the scheduler may still use would kill its pods.
        report->errors.push_back(s.error().WithContext("cordoning warm node " + stop.instance_id));
        continue;
      }
    }
    Status s = cloud_.Stop({stop.instance_id}, stop.state);
    if (!s.ok()) {
      report->errors.push_back(s.error().WithContext("stopping warm node " + stop.instance_id));
      continue;
    }
    result->warm_stopped.push_back(stop.instance_id);
    if (store_ != nullptr) {
      // Stopped, the node costs its volumes: its price from now until woken.
      const double waiting = stop.waiting_usd_per_hour;
      report->Record(store_->RecordNodePrice(stop.instance_id, now, waiting));
    }
  }
  if (nodes_ == nullptr) return;
  for (const std::string& id : actions.warm_returns) {
    Status s = nodes_->SetWarm(id, false);
    if (!s.ok() && s.error().category() != ErrorCategory::kNotFound)
      report->errors.push_back(s.error().WithContext("returning woken node " + id));
  }
}

void Actuator::SetWarmPools(const Plan& plan, const Policy& policy, TickReport* report) {
  if (options_.dry_run) return;
  for (const auto& [pool_name, size] : plan.warm_targets) {
    const NodePoolPolicy* pool = policy.FindPool(pool_name);
    if (pool == nullptr || pool->actuation != Actuation::kAsg || !pool->warm) continue;
    const std::pair<int, WarmState> wanted{size, pool->warm->state};
    auto it = warm_pool_sizes_.find(pool->auto_scaling_group);
    if (it != warm_pool_sizes_.end() && it->second == wanted) continue;
    Status s = cloud_.PutWarmPool(pool->auto_scaling_group, size, pool->warm->state);
    if (!s.ok()) {
      report->errors.push_back(s.error().WithContext("warm pool of " + pool->auto_scaling_group));
      continue;
    }
    warm_pool_sizes_[pool->auto_scaling_group] = wanted;
  }
}

void Actuator::TerminateWarm(int64_t decision_id, size_t index, const TerminationAction& term,
                             const Snapshot& snapshot, ActuationResult* result, TickReport* report) {
  const std::string& id = term.instance_id.empty() ? term.node_id : term.instance_id;
  const auto warm = std::find_if(snapshot.warm_nodes.begin(), snapshot.warm_nodes.end(),
                                 [&](const WarmNode& w) { return w.instance_id == id; });
  if (warm == snapshot.warm_nodes.end() || options_.dry_run) return;
  for (const EndedNode& e : result->ended)
    if (e.instance_id == id) return;
  ActionRecord intent;
  intent.decision_id = decision_id;
  intent.kind = ActionKind::kTerminate;
  intent.idempotency_token = options_.token_prefix + std::to_string(decision_id) + "-" + std::to_string(index);
  intent.pool = warm->pool;
  intent.offering = warm->offering;
  intent.count = 1;
  intent.instance_ids = {id};
  intent.reason = term.reason;
  int64_t action_id = 0;
  if (!RecordIntent(intent, &action_id, report)) return;
  Status s = cloud_.Terminate({id});
  if (store_ != nullptr) {
    report->Record(store_->RecordActionOutcome(action_id, s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
                                               s.ok() ? "" : s.error().ToString(),
                                               s.ok() ? std::vector<std::string>{id} : std::vector<std::string>{}));
    if (s.ok()) report->Record(store_->RecordNodeEnd({id, clock_.WallNow(), "terminated"}));
  }
  if (!s.ok()) {
    report->errors.push_back(s.error().WithContext("terminate warm node " + id));
    ++report->terminations_failed;
    return;
  }
  result->ended.push_back({id, "terminated"});
  ++report->nodes_terminated;
}

bool Actuator::ParkOne(const Node& node, const TerminationAction& term, const Policy& policy,
                       const Snapshot& snapshot, ActuationResult* result, TickReport* report) {
  const NodePoolPolicy* pool = policy.FindPool(node.pool);
  if (pool == nullptr || !pool->warm || !node.running.empty() || node.instance_id.empty()) return false;
  Parking parking;
  parking.instance.instance_id = node.instance_id;
  parking.instance.pool = node.pool;
  parking.instance.offering = node.offering;
  parking.instance.launch_time = node.launch_time;
  parking.instance.state = InstanceState::kStopped;
  parking.state = pool->warm->state;
  parking.waiting_usd_per_hour = WarmWaitingUsdPerHour(snapshot, *pool, node.offering.instance_type);
  if (nodes_ != nullptr) {
    // Drained like any node leaving service (pods gpuscaler does not plan
    // may run there), then stopped instead of terminated (FinishEndedDrains).
    const DrainRequest drain{node.instance_id, 0, term.reason, "parked", policy.disruption.drain_timeout,
                             policy.disruption.do_not_disrupt_labels};
    Status s = nodes_->BeginDrain(drain);
    if (s.ok()) {
      parking_[node.instance_id] = std::move(parking);
      result->draining.push_back(node.instance_id);
      result->scaled_down_pools.insert(node.pool);
      ++report->drains_started;
      return true;
    }
    if (s.error().category() != ErrorCategory::kNotFound) {
      report->errors.push_back(s.error().WithContext("drain " + node.instance_id + " before parking it"));
      result->failed = true;
      return true;  // kept; the next plan decides again
    }
  }
  return StopParked(parking, result, report);
}

bool Actuator::StopParked(const Parking& parking, ActuationResult* result, TickReport* report) {
  const std::string& id = parking.instance.instance_id;
  if (nodes_ != nullptr) {
    Status s = nodes_->SetWarm(id, true);
    if (!s.ok() && s.error().category() != ErrorCategory::kNotFound) return false;
  }
  Status s = cloud_.Stop({id}, parking.state);
  if (!s.ok()) {
    report->errors.push_back(s.error().WithContext("stopping node " + id + " into warm capacity"));
    if (nodes_ != nullptr) (void)nodes_->SetWarm(id, false);
    return false;
  }
  result->parked.push_back(parking.instance);
  result->scaled_down_pools.insert(parking.instance.pool);
  if (store_ != nullptr) report->Record(store_->RecordNodePrice(id, clock_.WallNow(), parking.waiting_usd_per_hour));
  return true;
}

bool Actuator::FinishParking(const DrainOutcome& drain, ActuationResult* result, TickReport* report) {
  auto it = parking_.find(drain.request.instance_id);
  if (it == parking_.end()) return false;
  const Parking parking = std::move(it->second);
  parking_.erase(it);
  if (drain.end != DrainEnd::kDrained || !StopParked(parking, result, report)) {
    result->kept.push_back(parking.instance.instance_id);
    result->failed = true;
  }
  return true;
}

bool Actuator::RecoverWake(const ActionRow& row, ActuationResult* result, TickReport* report) {
  const ActionRecord& a = row.action;
  if (a.kind != ActionKind::kLaunch || a.instance_ids.empty()) return false;
  Status s = cloud_.Start(a.instance_ids);
  failpoint::Check("recover.wake.after_call");
  if (!s.ok()) {
    report->errors.push_back(s.error().WithContext("replaying wake intent " + a.idempotency_token));
    report->Record(store_->RecordActionOutcome(row.id, ActionOutcome::kFailed,
                                               "not woken after a restart: " + s.error().ToString(), {}));
    return true;
  }
  const WallTime now = clock_.WallNow();
  for (const std::string& id : a.instance_ids) {
    result->launched.push_back(WokenNode(id, a.pool, a.offering, now));
    result->woken.push_back(id);
    report->Record(store_->RecordNodePrice(id, now, a.offering.usd_per_hour));
  }
  report->Record(store_->RecordActionOutcome(row.id, ActionOutcome::kSucceeded, "woken after a restart",
                                             a.instance_ids));
  result->failed = true;
  return true;
}

}  // namespace gpuscaler
