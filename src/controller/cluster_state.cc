#include "gpuscaler/controller/cluster_state.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

double HoursLeftInMonth(WallTime t) {
  return std::chrono::duration<double>(UsageMeter::NextMonthStart(t) - t).count() / 3600.0;
}

}  // namespace

ClusterState::ClusterState(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
                           const Catalog& catalog, UsageMeter& usage, ClusterStateOptions options)
    : clock_(clock),
      cloud_(cloud),
      store_(store),
      work_(work),
      catalog_(catalog),
      usage_(usage),
      options_(std::move(options)),
      availability_(options_.unavailable_base, options_.unavailable_max),
      price_feed_(clock.WallNow()),
      risk_(options_.interruption_risk),
      lost_work_(options_.interruption_risk.half_life),
      warm_up_(catalog) {
  snapshot_.gpu_models = catalog_.gpu_models;
  snapshot_.instance_types = catalog_.instance_types;
  snapshot_.offerings = catalog_.Offerings(options_.regions);
  const size_t n = snapshot_.offerings.size();
  prior_rate_.resize(n);
  offering_key_.resize(n);
  risk_group_.resize(n);
  unflushed_exposure_h_.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const Offering& o = snapshot_.offerings[i];
    offering_key_[i] = o.Key();
    offering_index_[offering_key_[i]] = i;
    prior_rate_[i] = o.interruptions_per_hour;
    const InstanceType* t = catalog_.FindInstanceType(o.instance_type);
    risk_group_[i] = (t != nullptr ? t->FamilyOrName() : o.instance_type) + "/" + o.zone;
  }
}

void ClusterState::MarkChanged(bool structural) {
  changes_.any = true;
  if (structural) changes_.structural = true;
}

StateChanges ClusterState::TakeChanges() {
  StateChanges out = changes_;
  changes_ = {};
  return out;
}

bool ClusterState::Observe(const Policy& policy, WallTime now, double month_to_date_usd, TickReport* report) {
  snapshot_.time = now;
  const size_t first_milestone = report->milestones.size();
  snapshot_.month_to_date_usd = month_to_date_usd;
  snapshot_.month_to_date_usd_by_pool = usage_.month_to_date_usd_by_pool();
  snapshot_.month_to_date_usd_by_team = usage_.month_to_date_usd_by_team();
  // Before notices are read: the work that ran since the last tick.
  lost_work_.Accrue(now, snapshot_.nodes);
  // Notices name instances: until the inventory has been listed once (a
  // start, a restart) it is listed first, so a notice of the last minutes
  // finds its node instead of being taken for another cluster's.
  bool listed = false;
  if (!inventory_listed_) listed = ReadInstances(policy, now, report);
  ReadInterruptions(policy, now, report);
  if (inventory_listed_) listed = ReadInstances(policy, now, report);
  inventory_listed_ = inventory_listed_ || listed;
  if (listed && nodes_ != nullptr) CheckNodeHealth(policy, now, report);
  if (listed) RemoveRebalanced(now);
  ReadPrices(policy, now, report);
  RefreshOfferings(now);
  RefreshRisk(now);
  RefreshWork();
  report->milestones.insert(report->milestones.end(), milestones_.begin(), milestones_.end());
  milestones_.clear();
  warm_up_.Observe(std::span(report->milestones).subspan(first_milestone));
  RefreshSignals(policy, now);
  spot_floor_.Observe(policy, now, snapshot_.nodes);
  PublishLearned(policy, now);
  snapshot_.hours_left_in_month = HoursLeftInMonth(now);
  return listed;
}

void ClusterState::Apply(const ActuationResult& result, const Policy& policy, WallTime now, bool structural,
                         TickReport* report) {
  for (const LaunchedNode& l : result.launched) {
    if (node_index_.count(l.instance.instance_id) == 0) {
      AddNode(l.instance, l.state, policy, now);
      node_info_.back().launched_here = !structural;
    }
  }
  for (const InFlightLaunch& l : result.in_flight) AddAwaited(l, policy);
  for (const EndedNode& e : result.ended) {
    terminated_.insert(e.instance_id);
    auto it = node_index_.find(e.instance_id);
    if (it == node_index_.end()) continue;
    disruption_window_.RecordRemoval(now, snapshot_.nodes[it->second].pool);
    RemoveNode(it->second, now, e.cause, report);
  }
  if (policy.spot.fallback_to_on_demand) {
    for (const std::string& id : result.spot_capacity_error_units) {
      for (const DemandUnit& u : snapshot_.pending) {
        if (u.id == id) disruption_window_.PauseSpot(u.workload_class, now + policy.spot.fallback_duration);
      }
    }
  }
  terminated_.insert(result.terminated_elsewhere.begin(), result.terminated_elsewhere.end());
  for (const std::string& id : result.draining) {
    draining_.insert(id);
    if (auto it = node_index_.find(id); it != node_index_.end()) snapshot_.nodes[it->second].state = NodeState::kDraining;
  }
  for (const std::string& id : result.kept) {
    draining_.erase(id);
    auto it = node_index_.find(id);
    if (it != node_index_.end() && snapshot_.nodes[it->second].state == NodeState::kDraining &&
        !node_info_[it->second].notice_deadline)
      snapshot_.nodes[it->second].state = NodeState::kReady;
  }
  for (const EndedNode& e : result.ended) draining_.erase(e.instance_id);
  if (!result.kept.empty()) MarkChanged(true);
  if (!result.launched.empty() || !result.ended.empty() || !result.in_flight.empty() || !result.draining.empty())
    MarkChanged(structural);
  if (result.failed) MarkChanged(true);
}

void ClusterState::AcknowledgeNotices(TickReport* report) {
  if (unacknowledged_notices_.empty()) return;
  report->Record(cloud_.AcknowledgeInterruptions(unacknowledged_notices_));
  unacknowledged_notices_.clear();
}

void ClusterState::ReadInterruptions(const Policy& policy, WallTime now, TickReport* report) {
  Result<std::vector<InterruptionNotice>> notices = cloud_.PollInterruptions();
  if (!notices) {
    report->errors.push_back(notices.error().WithContext("interruption notices"));
    return;
  }
  unacknowledged_notices_.insert(unacknowledged_notices_.end(), notices->begin(), notices->end());
  bool flushed = false;
  for (const InterruptionNotice& n : *notices) {
    if (n.rebalance) {
      OnRebalance(n.instance_id, policy, report);
      continue;
    }
    ++report->interruption_notices;
    auto it = node_index_.find(n.instance_id);
    if (it == node_index_.end()) continue;
    NodeInfo& info = node_info_[it->second];
    if (info.notice_deadline) continue;
    info.notice_deadline = n.deadline;
    const Node& node = snapshot_.nodes[it->second];
    if (options_.learn_interruption_risk && info.offering >= 0 &&
        node.offering.capacity_type == CapacityType::kSpot) {
      // Exposure up to now first, so the event is weighed against it.
      if (!flushed) FlushExposure(now);
      flushed = true;
      const auto o = static_cast<size_t>(info.offering);
      risk_.RecordInterruption(offering_key_[o], risk_group_[o], now);
      risk_dirty_ = true;
    }
    if (node.offering.capacity_type == CapacityType::kSpot && info.offering >= 0) {
      // The failure domain is the risk group (family x zone): spot capacity
      // of one family in one zone goes at once, every size together, so
      // notices on a p3.2xlarge and a p3.16xlarge of one zone are one wave.
      const std::string& domain = risk_group_[static_cast<size_t>(info.offering)];
      int domain_nodes = 0;
      for (size_t j = 0; j < snapshot_.nodes.size(); ++j) {
        const int o = node_info_[j].offering;
        domain_nodes += o >= 0 && snapshot_.nodes[j].state != NodeState::kTerminating &&
                        snapshot_.nodes[j].offering.capacity_type == CapacityType::kSpot &&
                        risk_group_[static_cast<size_t>(o)] == domain;
      }
      // A wave marks the whole domain reclaimed; the snapshot
      // (reclaimed_spot_pools) and the plan's notes say so from this tick's
      // RefreshOfferings on.
      availability_.RecordReclaimNotice(domain, domain_nodes, now);
    }
    // The work source's view, not the snapshot's (refreshed later this tick).
    if (node.offering.capacity_type == CapacityType::kSpot) lost_work_.ChargeInterruption(work_.RunningOn(node.instance_id));
    snapshot_.nodes[it->second].state = NodeState::kDraining;
    replacements_dirty_ = true;
    MarkChanged(true);
    if (nodes_ != nullptr) DrainNoticed(node.instance_id, n.deadline, now, report);
  }
}

bool ClusterState::ReadInstances(const Policy& policy, WallTime now, TickReport* report) {
  for (size_t i = snapshot_.nodes.size(); i-- > 0;) {
    const NodeInfo& info = node_info_[i];
    if (info.notice_deadline && *info.notice_deadline <= now) {
      terminated_.insert(snapshot_.nodes[i].instance_id);
      RemoveNode(i, std::max(*info.notice_deadline, snapshot_.nodes[i].launch_time), "interrupted", report);
      MarkChanged(true);
    }
  }
  if (last_list_ && now - *last_list_ < options_.reconcile_interval) return last_list_ok_;
  last_list_ = now;
  Result<std::vector<Instance>> listed = cloud_.ListInstances();
  last_list_ok_ = listed.ok();
  if (!listed) {
    report->errors.push_back(listed.error().WithContext("listing instances"));
    return false;
  }
  std::vector<char> seen(snapshot_.nodes.size(), 0);
  std::set<std::string> still_listed;
  for (const Instance& inst : *listed) {
    if (!terminated_.empty() && terminated_.count(inst.instance_id) != 0) {
      still_listed.insert(inst.instance_id);
      continue;
    }
    auto it = node_index_.find(inst.instance_id);
    if (it == node_index_.end() && placeholders_ > 0 && recorded_before_start_.count(inst.instance_id) == 0 &&
        ClaimAwaited(inst, policy, now, report)) {
      seen[node_index_.at(inst.instance_id)] = 1;
      continue;
    }
    if (it == node_index_.end()) {
      AddNode(inst, NodeStateOf(inst.state), policy, now);
      MarkChanged(true);
      seen.push_back(1);
      if (store_ != nullptr) {
        NodeLaunchRecord rec{inst.instance_id,
                             inst.instance_id,
                             inst.pool,
                             inst.offering,
                             0,
                             inst.launch_time,
                             0,
                             "found running, not launched by this controller"};
        if (const InstanceType* t = catalog_.FindInstanceType(inst.offering.instance_type))
          rec.gpu_count = t->gpu_count;
        report->Record(store_->RecordNodeLaunch(rec));
      }
      continue;
    }
    seen[it->second] = 1;
    Node& node = snapshot_.nodes[it->second];
    if (node.state == NodeState::kLaunching || node.state == NodeState::kReady) {
      const NodeState s = NodeStateOf(inst.state);
      if (s != node.state) {
        // Launching and ready nodes both take work in a plan: not news.
        node.state = s;
        MarkChanged(s != NodeState::kReady && s != NodeState::kLaunching);
      }
    }
  }
  terminated_.swap(still_listed);
  recorded_before_start_.clear();  // every instance listed now is known
  for (size_t i = snapshot_.nodes.size(); i-- > 0;) {
    if (seen[i] || node_info_[i].placeholder()) continue;
    RemoveNode(i, now, node_info_[i].notice_deadline ? "interrupted" : "vanished", report);
    MarkChanged(true);
  }
  if (placeholders_ > 0) ExpireAwaited(now, report);
  return true;
}

void ClusterState::ReadPrices(const Policy& policy, WallTime now, TickReport* report) {
  Result<std::vector<SpotPrice>> prices = price_feed_.Read(cloud_, now);
  PublishPriceStaleness(policy, now, report);
  if (!prices) {
    // Fail static: the last known (or catalog) prices stay in force.
    report->errors.push_back(prices.error().WithContext("spot prices"));
    return;
  }
  std::vector<PriceSample> samples;
  std::string key;
  for (const SpotPrice& p : *prices) {
    auto apply = [&](Offering& o) {
      if (o.usd_per_hour == p.usd_per_hour) return;
      o.usd_per_hour = p.usd_per_hour;
      MarkChanged(false);
      if (store_ != nullptr) samples.push_back({p.time, o});
      for (Node& n : snapshot_.nodes) {
        if (n.offering.instance_type != o.instance_type || n.offering.zone != o.zone ||
            n.offering.capacity_type != o.capacity_type)
          continue;
        n.offering.usd_per_hour = p.usd_per_hour;
        if (store_ != nullptr && !n.instance_id.empty()) {
          report->Record(
              store_->RecordNodePrice(n.instance_id, std::max(p.time, n.launch_time), p.usd_per_hour));
        }
      }
    };
    key.assign(p.instance_type).append("/").append(p.zone).append("/").append(ToString(p.capacity_type));
    auto it = offering_index_.find(key);
    if (it != offering_index_.end()) {
      apply(snapshot_.offerings[it->second]);
    } else {
      for (Offering& o : snapshot_.offerings) {
        if (o.instance_type == p.instance_type && o.region == p.zone && o.capacity_type == p.capacity_type)
          apply(o);
      }
    }
  }
  if (!samples.empty()) report->Record(store_->RecordPriceSamples(samples));
}

void ClusterState::PublishPriceStaleness(const Policy& policy, WallTime now, TickReport* report) {
  auto it = policy.signals.max_staleness.find("prices");
  const Seconds max_age = it == policy.signals.max_staleness.end() ? Seconds(3600) : it->second;
  std::string stale = price_feed_.Staleness(max_age, now);
  report->price_age = price_feed_.Age(now);
  report->stale_prices = stale.empty() || price_feed_.last_error().empty() ? stale
                                                                          : stale + " (" + price_feed_.last_error() + ")";
  if (stale != snapshot_.stale_prices) {
    snapshot_.stale_prices = std::move(stale);
    MarkChanged(true);
  }
}

void ClusterState::RefreshOfferings(WallTime now) {
  // Marks are per failure domain; the snapshot names every spot offering
  // of a marked domain (sorted, as the planner and the JSON expect).
  std::vector<std::string> reclaimed;
  const std::map<std::string, WallTime> domains = availability_.Reclaimed(now);
  if (!domains.empty()) {
    for (size_t i = 0; i < snapshot_.offerings.size(); ++i) {
      if (snapshot_.offerings[i].capacity_type == CapacityType::kSpot && domains.count(risk_group_[i]) > 0)
        reclaimed.push_back(offering_key_[i]);
    }
    std::sort(reclaimed.begin(), reclaimed.end());
  }
  if (reclaimed != snapshot_.reclaimed_spot_pools) {
    // A new mark comes with its notices (already structural); a cooldown
    // ending only lets later plans use the pool again, it asks for none.
    const bool added = std::any_of(reclaimed.begin(), reclaimed.end(), [&](const std::string& k) {
      return std::find(snapshot_.reclaimed_spot_pools.begin(), snapshot_.reclaimed_spot_pools.end(), k) ==
             snapshot_.reclaimed_spot_pools.end();
    });
    snapshot_.reclaimed_spot_pools = std::move(reclaimed);
    MarkChanged(added);
  }
  std::vector<std::string> unavailable = availability_.Unavailable(now);
  if (unavailable == last_unavailable_) return;
  for (const std::string& key : last_unavailable_) {
    auto it = offering_index_.find(key);
    if (it != offering_index_.end()) snapshot_.offerings[it->second].available = true;
  }
  for (const std::string& key : unavailable) {
    auto it = offering_index_.find(key);
    if (it != offering_index_.end()) snapshot_.offerings[it->second].available = false;
  }
  last_unavailable_ = std::move(unavailable);
  MarkChanged(true);
}

void ClusterState::Restore(WallTime now, TickReport* report) {
  if (store_ == nullptr || !options_.restore_from_store) return;
  const WallTime risk_since = now - options_.risk_history;
  const WallTime since = std::min(risk_since, UsageMeter::MonthStart(now));
  Result<std::vector<NodeLifecycle>> history = store_->NodeLifecycles(since, now);
  if (!history) {
    // Degraded, not fatal: the catalog's rates stay the priors and the month
    // starts from what this process sees.
    report->errors.push_back(history.error().WithContext("reading node history"));
    return;
  }
  report->Record(usage_.RestoreMonth(*history, now));
  std::vector<std::pair<WallTime, std::string>> removals;
  for (const NodeLifecycle& n : *history) {
    if (n.end_time && *n.end_time <= now && (n.cause == "terminated" || n.cause == "consolidated")) {
      removals.emplace_back(*n.end_time, n.pool);
    }
    if (!options_.learn_interruption_risk || n.offering.capacity_type != CapacityType::kSpot) continue;
    if (n.end_time && *n.end_time <= risk_since) continue;
    auto it = offering_index_.find(n.offering.Key());
    if (it == offering_index_.end()) continue;
    const WallTime from = std::max(n.launch_time, risk_since);
    const WallTime to = std::min(n.end_time.value_or(now), now);
    const bool interrupted = n.cause == "interrupted" && n.end_time && *n.end_time <= now;
    risk_.AddHistory(offering_key_[it->second], risk_group_[it->second], from, to, interrupted, now);
    risk_dirty_ = true;
  }
  disruption_window_.Restore(std::move(removals));
}

void ClusterState::PublishLearned(const Policy& policy, WallTime now) {
  if (warm_up_.Publish(snapshot_)) MarkChanged(false);
  if (disruption_window_.Publish(policy, now, snapshot_)) MarkChanged(true);
  if (lost_work_.Publish(policy, snapshot_)) MarkChanged(true);
  spot_floor_.Publish(policy, snapshot_);
}

void ClusterState::AccumulateExposure(WallTime now) {
  if (!last_exposure_) {
    last_exposure_ = now;
    return;
  }
  const double dt = std::chrono::duration<double>(now - *last_exposure_).count();
  last_exposure_ = now;
  if (dt <= 0) return;
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    const NodeInfo& info = node_info_[i];
    if (info.offering >= 0 && !info.notice_deadline && !info.placeholder() &&
        snapshot_.nodes[i].offering.capacity_type == CapacityType::kSpot) {
      unflushed_exposure_h_[static_cast<size_t>(info.offering)] += dt / 3600.0;
    }
  }
}

void ClusterState::FlushExposure(WallTime now) {
  for (size_t i = 0; i < unflushed_exposure_h_.size(); ++i) {
    if (unflushed_exposure_h_[i] <= 0) continue;
    risk_.AddExposure(offering_key_[i], risk_group_[i], unflushed_exposure_h_[i], now);
    unflushed_exposure_h_[i] = 0;
  }
}

void ClusterState::RefreshRisk(WallTime now) {
  if (!options_.learn_interruption_risk) return;
  const bool due = !last_risk_refresh_ || now - *last_risk_refresh_ >= options_.risk_refresh_interval;
  if (!risk_dirty_ && !due) return;
  FlushExposure(now);
  last_risk_refresh_ = now;
  risk_dirty_ = false;
  bool moved = false;
  for (size_t i = 0; i < snapshot_.offerings.size(); ++i) {
    Offering& o = snapshot_.offerings[i];
    if (o.capacity_type != CapacityType::kSpot) continue;
    const double rate = risk_.Rate(offering_key_[i], risk_group_[i], prior_rate_[i], now);
    const double old = o.interruptions_per_hour;
    // Small moves are not news: the plan would barely change, and every
    // changed snapshot costs a planner call. Below 0.001 interruptions per
    // node-hour a move changes the expected cost of an hour's lost work by
    // less than 0.1 % of the on-demand price: not worth a replan either.
    if (std::abs(rate - old) <= std::max(0.05 * std::max(rate, old), 0.001)) continue;
    o.interruptions_per_hour = rate;
    moved = true;
  }
  if (!moved) return;
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    const int o = node_info_[i].offering;
    if (o >= 0) {
      snapshot_.nodes[i].offering.interruptions_per_hour =
          snapshot_.offerings[static_cast<size_t>(o)].interruptions_per_hour;
    }
  }
  MarkChanged(false);
}

void ClusterState::RefreshWork() {
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    Node& node = snapshot_.nodes[i];
    NodeInfo& info = node_info_[i];
    if (info.placeholder()) continue;
    const uint64_t v = work_.RunningVersion(node.instance_id);
    if (v == info.running_version) continue;
    info.running_version = v;
    node.running = work_.RunningOn(node.instance_id);
    if (info.launched_here && !info.first_pod && !node.running.empty()) {
      info.first_pod = true;
      milestones_.push_back({info.family, "first_pod",
                             std::chrono::duration<double>(snapshot_.time - node.launch_time).count()});
    }
    usage_.SetRunning(node.instance_id, node.running);
    MarkChanged(false);
    if (info.notice_deadline || !info.repair.empty() || info.rebalance_replace) replacements_dirty_ = true;
  }
  const uint64_t pv = work_.PendingVersion();
  if (pv == pending_version_ && !replacements_dirty_) return;
  pending_version_ = pv;
  replacements_dirty_ = false;
  MarkChanged(false);
  const std::vector<DemandUnit>& pending = work_.Pending();
  const size_t n = std::min(pending.size(), options_.max_pending_units);
  snapshot_.pending.assign(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    if (!node_info_[i].notice_deadline && node_info_[i].repair.empty() && !node_info_[i].rebalance_replace) continue;
    for (const DemandUnit& u : snapshot_.nodes[i].running) {
      snapshot_.pending.push_back(u);
      snapshot_.pending.back().id += "@replace";
    }
  }
}

void ClusterState::RefreshSignals(const Policy& policy, WallTime now) {
  signals_ = work_.Signals();
  std::set<std::string> blocked;
  for (const SignalStatus& s : signals_) {
    auto it = policy.signals.max_staleness.find(s.source);
    const Seconds max_age = it == policy.signals.max_staleness.end() ? Seconds(120) : it->second;
    if (!s.sampled_at || now - *s.sampled_at > max_age) blocked.insert(s.classes.begin(), s.classes.end());
  }
  std::vector<std::string> list(blocked.begin(), blocked.end());
  if (list != snapshot_.scale_down_blocked_classes) {
    snapshot_.scale_down_blocked_classes = std::move(list);
    MarkChanged(true);
  }
}

void ClusterState::AddNode(const Instance& instance, NodeState state, const Policy& policy, WallTime now) {
  NodeInfo info;
  Node node = NodeFor(instance, state, policy, &info);
  usage_.AddNode(node.instance_id, now);
  node_index_[node.instance_id] = snapshot_.nodes.size();
  snapshot_.nodes.push_back(std::move(node));
  node_info_.push_back(std::move(info));
}

Node ClusterState::NodeFor(const Instance& instance, NodeState state, const Policy& policy, NodeInfo* info) const {
  Node node;
  node.id = instance.instance_id;
  node.instance_id = instance.instance_id;
  node.pool = instance.pool;
  node.offering = instance.offering;
  auto it = offering_index_.find(instance.offering.Key());
  if (it != offering_index_.end()) {
    node.offering.usd_per_hour = snapshot_.offerings[it->second].usd_per_hour;
    node.offering.interruptions_per_hour = snapshot_.offerings[it->second].interruptions_per_hour;
    info->offering = static_cast<int>(it->second);
  }
  const InstanceType* type = catalog_.FindInstanceType(instance.offering.instance_type);
  info->family = type != nullptr ? type->FamilyOrName() : instance.offering.instance_type;
  node.launch_time = instance.launch_time;
  node.state = draining_.count(instance.instance_id) != 0 ? NodeState::kDraining : state;
  node.labels = instance.tags;
  for (const std::string& label : policy.disruption.do_not_disrupt_labels) {
    auto l = instance.tags.find(label);
    if (l != instance.tags.end() && l->second == "true") node.do_not_disrupt = true;
  }
  return node;
}

void ClusterState::RemoveNode(size_t index, WallTime end, const std::string& cause, TickReport* report) {
  const Node& node = snapshot_.nodes[index];
  if (node_info_[index].placeholder()) {
    --placeholders_;
  } else {
    report->Record(usage_.EndNode(node, end));
    if (store_ != nullptr) report->Record(store_->RecordNodeEnd({node.instance_id, end, cause}));
  }
  if (node_info_[index].notice_deadline || !node_info_[index].repair.empty()) replacements_dirty_ = true;
  snapshot_.nodes.erase(snapshot_.nodes.begin() + static_cast<std::ptrdiff_t>(index));
  node_info_.erase(node_info_.begin() + static_cast<std::ptrdiff_t>(index));
  RebuildIndex();
}

void ClusterState::RebuildIndex() {
  node_index_.clear();
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    const Node& n = snapshot_.nodes[i];
    node_index_[n.instance_id.empty() ? n.id : n.instance_id] = i;
  }
}

std::string ClusterState::SignalsJson(WallTime now) const {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const SignalStatus& s : signals_) {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["source"] = s.source;
    j["classes"] = s.classes;
    if (s.sampled_at) {
      j["value"] = s.value;
      j["age_s"] = (now - *s.sampled_at).count();
    } else {
      j["value"] = nullptr;
      j["age_s"] = nullptr;
    }
    arr.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["signals"] = std::move(arr);
  out["blocked_classes"] = snapshot_.scale_down_blocked_classes;
  return out.dump();
}

std::string ClusterState::SummaryJson() const {
  nlohmann::ordered_json out;
  out["pending_units"] = snapshot_.pending.size();
  out["nodes"] = snapshot_.nodes.size();
  out["offerings"] = snapshot_.offerings.size();
  out["unavailable_offerings"] = last_unavailable_;
  out["month_to_date_usd"] = snapshot_.month_to_date_usd;
  return out.dump();
}

}  // namespace gpuscaler
