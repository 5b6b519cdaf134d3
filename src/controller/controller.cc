#include "gpuscaler/controller/controller.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuscaler/controller/failpoint.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

double UnitGpus(const DemandUnit& u) {
  if (u.gpus > 0) return u.gpus;
  if (u.gpu_milli > 0) return u.gpu_milli / 1000.0;
  if (!u.mig_profile.empty()) return 1.0 / 7.0;
  return 0;
}

std::string MonthKey(WallTime t) {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  return std::to_string(static_cast<int>(ymd.year())) + "-" + std::to_string(static_cast<unsigned>(ymd.month()));
}

double HoursLeftInMonth(WallTime t) {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  const std::chrono::year_month_day next = (ymd.year() / ymd.month() / 1) + std::chrono::months(1);
  const WallTime end = std::chrono::time_point_cast<Seconds>(std::chrono::sys_days(next));
  return std::chrono::duration<double>(end - t).count() / 3600.0;
}

NodeState StateFor(InstanceState s) {
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

std::string JoinErrors(const std::vector<OfferingError>& errors) {
  std::string out;
  for (const OfferingError& e : errors) {
    if (!out.empty()) out += "; ";
    out += e.offering_key + ": " + e.error.ToString();
  }
  return out;
}

}  // namespace

Controller::Controller(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
                       const Catalog& catalog, Policy policy, ControllerOptions options, PlannerFn planner)
    : clock_(clock),
      cloud_(cloud),
      store_(store),
      work_(work),
      catalog_(catalog),
      policy_(std::move(policy)),
      options_(std::move(options)),
      planner_(planner ? std::move(planner) : PlannerFn([](const Snapshot& s, const Policy& p) { return MakePlan(s, p); })),
      availability_(options_.unavailable_base, options_.unavailable_max),
      risk_(options_.interruption_risk) {
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
    risk_group_[i] = (t != nullptr && !t->family.empty() ? t->family : o.instance_type) + "/" + o.zone;
  }
}

void Controller::SetPolicy(Policy policy) {
  policy_ = std::move(policy);
  changed_ = structure_changed_ = true;
}

void Controller::Record(const Status& s, TickReport* report) {
  if (!s.ok()) report->errors.push_back(s.error());
}

TickReport Controller::Tick() {
  TickReport report;
  const WallTime now = clock_.WallNow();
  report.time = now;
  snapshot_.time = now;
  if (store_ != nullptr) Record(store_->BeginTick(), &report);

  AccumulateUsage(now);
  if (!risk_restored_) {
    risk_restored_ = true;
    RestoreRisk(now, &report);
  }
  if (!recovered_) {
    recovered_ = true;
    RecoverOpenIntents(&report);
  }
  ReadInterruptions(&report);
  const bool listed = ReadInstances(&report);
  ReadPrices(&report);
  RefreshOfferings(now);
  RefreshRisk(now);
  RefreshWork(now);
  RefreshSignals(now, &report);
  report.blocked_classes = blocked_;
  snapshot_.hours_left_in_month = HoursLeftInMonth(now);

  bool age_crossed = false;
  for (const Node& n : snapshot_.nodes) {
    const WallTime mature = n.launch_time + policy_.disruption.min_node_age;
    if (mature > last_plan_time_ && mature <= now) age_crossed = true;
  }
  const bool quiet = last_plan_empty_ && !governor_.HasPendingHold();
  const bool unchanged = !changed_ && !age_crossed && now - last_plan_time_ < options_.max_plan_reuse;
  const bool in_interval = now - last_plan_time_ < options_.idle_replan_interval;
  bool covered = !structure_changed_ && last_launches_held_ == 0 && in_interval;
  for (size_t i = 0; covered && i < snapshot_.pending.size(); ++i) {
    covered = last_pending_ids_.count(snapshot_.pending[i].id) != 0;
  }
  const bool idle = snapshot_.pending.empty() && in_interval;
  const bool reuse = options_.reuse_unchanged_plans && ((quiet && unchanged) || idle || covered);

  if (!reuse) {
    report.planned = true;
    Plan plan = planner_(snapshot_, policy_);
    changed_ = false;
    structure_changed_ = false;
    last_pending_ids_.clear();
    for (const DemandUnit& u : snapshot_.pending) last_pending_ids_.insert(u.id);
    last_plan_time_ = now;
    if (!listed && !plan.terminations.empty()) {
      plan.terminations.clear();
      report.governor.notes.push_back("instance list unavailable: no terminations this tick");
    }
    if (!blocked_.empty()) DropBlockedTerminations(&plan, &report);
    std::map<std::string, int> per_pool;
    for (const Node& n : snapshot_.nodes) {
      if (n.state != NodeState::kTerminating) per_pool[n.pool] += 1;
    }
    GovernorResult g = governor_.Apply(policy_.scaling, per_pool, now, &plan);
    report.governor.launches_held = g.launches_held;
    last_launches_held_ = g.launches_held;
    report.governor.terminations_held += g.terminations_held;
    for (std::string& note : g.notes) report.governor.notes.push_back(std::move(note));

    int64_t decision_id = ++local_decisions_;
    bool decision_recorded = true;
    if (store_ != nullptr) {
      DecisionRecord d;
      d.time = now;
      d.source = options_.source;
      d.policy_name = policy_.name;
      d.policy_hash = policy_.content_hash;
      d.pending_units = static_cast<int>(snapshot_.pending.size());
      d.nodes = static_cast<int>(snapshot_.nodes.size());
      d.signals_json = SignalsJson(now);
      d.snapshot_summary_json = SummaryJson();
      d.plan_json = FormatPlanJsonLine(plan);
      d.summary = plan.summary;
      d.cost_before_usd_per_hour = plan.cost_before_usd_per_hour;
      d.cost_after_usd_per_hour = plan.cost_after_usd_per_hour;
      d.expected_interruption_usd_per_hour = plan.expected_interruption_usd_per_hour;
      d.scale_down_blocked = !blocked_.empty() || !listed;
      Result<int64_t> id = store_->RecordDecision(d);
      if (id) {
        decision_id = *id;
      } else {
        report.errors.push_back(id.error());
        decision_recorded = false;
      }
    }
    report.decision_id = decision_id;
    if (decision_recorded) {
      Actuate(decision_id, plan, &report);
    } else {
      // Intents would name a decision the store does not have (the local id
      // may even be another decision's, and so its tokens): act on nothing
      // and plan again next tick.
      report.governor.notes.push_back("decision not recorded in the audit store: no action this tick");
      changed_ = structure_changed_ = true;
    }
    last_plan_launched_nothing_ = std::all_of(plan.launches.begin(), plan.launches.end(),
                                              [](const LaunchAction& l) { return l.count == 0; });
    last_plan_empty_ = plan.terminations.empty() && last_plan_launched_nothing_;
    report.plan = std::move(plan);
  }

  failpoint::Check("tick.before_commit");
  if (store_ != nullptr) Record(store_->CommitTick(), &report);
  failpoint::Check("tick.after_commit");
  return report;
}

void Controller::DropBlockedTerminations(Plan* plan, TickReport* report) const {
  // Fail static even if a planner ignores scale_down_blocked_classes: no
  // node that runs, or whose pool serves, a blocked class is removed.
  std::set<std::string> pools;
  bool all_pools = false;
  for (const std::string& cls : blocked_) {
    const WorkloadClassPolicy* c = policy_.FindClass(cls);
    if (c == nullptr || c->pools.empty()) {
      all_pools = true;
    } else {
      pools.insert(c->pools.begin(), c->pools.end());
    }
  }
  std::vector<TerminationAction> kept;
  for (TerminationAction& t : plan->terminations) {
    bool blocked = all_pools || pools.count(t.pool) != 0;
    auto it = node_index_.find(t.instance_id.empty() ? t.node_id : t.instance_id);
    if (it != node_index_.end()) {
      for (const DemandUnit& u : snapshot_.nodes[it->second].running) {
        if (std::binary_search(blocked_.begin(), blocked_.end(), u.workload_class)) blocked = true;
      }
    }
    if (blocked) {
      ++report->governor.terminations_held;
      report->governor.notes.push_back("stale signals: keeping " + t.node_id);
    } else {
      kept.push_back(std::move(t));
    }
  }
  plan->terminations = std::move(kept);
}

void Controller::ReadInterruptions(TickReport* report) {
  Result<std::vector<InterruptionNotice>> notices = cloud_.PollInterruptions();
  if (!notices) {
    report->errors.push_back(notices.error().WithContext("interruption notices"));
    return;
  }
  const WallTime now = clock_.WallNow();
  bool flushed = false;
  for (const InterruptionNotice& n : *notices) {
    ++report->interruption_notices;
    auto it = node_index_.find(n.instance_id);
    if (it == node_index_.end()) continue;
    NodeInfo& info = node_info_[it->second];
    if (info.notice_deadline) continue;
    info.notice_deadline = n.deadline;
    const Node& node = snapshot_.nodes[it->second];
    if (options_.learn_interruption_risk && info.offering >= 0 && node.offering.capacity_type == CapacityType::kSpot) {
      // Exposure up to now first, so the event is weighed against it.
      if (!flushed) FlushExposure(now);
      flushed = true;
      const auto o = static_cast<size_t>(info.offering);
      risk_.RecordInterruption(offering_key_[o], risk_group_[o], now);
      risk_dirty_ = true;
    }
    snapshot_.nodes[it->second].state = NodeState::kDraining;
    shadows_dirty_ = true;
    changed_ = structure_changed_ = true;
  }
}

bool Controller::ReadInstances(TickReport* report) {
  const WallTime now = clock_.WallNow();
  // A node whose interruption deadline has passed is gone, listed or not.
  for (size_t i = snapshot_.nodes.size(); i-- > 0;) {
    const NodeInfo& info = node_info_[i];
    if (info.notice_deadline && *info.notice_deadline <= now) {
      terminated_.insert(snapshot_.nodes[i].instance_id);
      RemoveNode(i, std::max(*info.notice_deadline, snapshot_.nodes[i].launch_time), "interrupted", report);
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
    if (it == node_index_.end()) {
      AddNode(inst, 0, StateFor(inst.state));
      seen.push_back(1);
      if (store_ != nullptr) {
        NodeLaunchRecord rec{inst.instance_id, inst.instance_id, inst.pool, inst.offering,
                             0, inst.launch_time, 0, "found running, not launched by this controller"};
        if (const InstanceType* t = catalog_.FindInstanceType(inst.offering.instance_type)) rec.gpu_count = t->gpu_count;
        Record(store_->RecordNodeLaunch(rec), report);
      }
      continue;
    }
    seen[it->second] = 1;
    Node& node = snapshot_.nodes[it->second];
    if (node.state == NodeState::kLaunching || node.state == NodeState::kReady) {
      const NodeState s = StateFor(inst.state);
      if (s != node.state) {
        // Launching and ready nodes both take work in a plan: not news.
        node.state = s;
        changed_ = true;
        if (s != NodeState::kReady && s != NodeState::kLaunching) structure_changed_ = true;
      }
    }
  }
  terminated_.swap(still_listed);
  for (size_t i = snapshot_.nodes.size(); i-- > 0;) {
    if (seen[i]) continue;
    const NodeInfo& info = node_info_[i];
    RemoveNode(i, now, info.notice_deadline ? "interrupted" : "vanished", report);
  }
  return true;
}

void Controller::ReadPrices(TickReport* report) {
  const WallTime now = clock_.WallNow();
  const WallTime since = price_since_.value_or(now - Seconds(3600));
  Result<std::vector<SpotPrice>> prices = cloud_.SpotPrices(since);
  if (!prices) {
    // Fail static: the last known (or catalog) prices stay in force.
    report->errors.push_back(prices.error().WithContext("spot prices"));
    return;
  }
  price_since_ = now + Seconds(1);
  std::vector<PriceSample> samples;
  for (const SpotPrice& p : *prices) {
    if (p.time > now) continue;
    auto apply = [&](Offering& o) {
      if (o.usd_per_hour == p.usd_per_hour) return;
      o.usd_per_hour = p.usd_per_hour;
      changed_ = true;
      if (store_ != nullptr) samples.push_back({p.time, o});
      for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
        Node& n = snapshot_.nodes[i];
        if (n.offering.instance_type != o.instance_type || n.offering.zone != o.zone ||
            n.offering.capacity_type != o.capacity_type)
          continue;
        n.offering.usd_per_hour = p.usd_per_hour;
        if (store_ != nullptr) {
          Record(store_->RecordNodePrice(n.instance_id, std::max(p.time, n.launch_time), p.usd_per_hour), report);
        }
      }
    };
    const std::string key = p.instance_type + "/" + p.zone + "/" + std::string(ToString(p.capacity_type));
    auto it = offering_index_.find(key);
    if (it != offering_index_.end()) {
      apply(snapshot_.offerings[it->second]);
    } else {
      for (Offering& o : snapshot_.offerings) {
        if (o.instance_type == p.instance_type && o.region == p.zone && o.capacity_type == p.capacity_type) apply(o);
      }
    }
  }
  if (!samples.empty()) Record(store_->RecordPriceSamples(samples), report);
}

void Controller::RefreshOfferings(WallTime now) {
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
  changed_ = structure_changed_ = true;
}

void Controller::RestoreRisk(WallTime now, TickReport* report) {
  if (store_ == nullptr || !options_.learn_interruption_risk) return;
  const WallTime since = now - options_.risk_history;
  Result<std::vector<NodeLifecycle>> history = store_->NodeLifecycles(since, now);
  if (!history) {
    // Degraded, not fatal: the catalog's rates stay the priors.
    report->errors.push_back(history.error().WithContext("reading node history for interruption rates"));
    return;
  }
  for (const NodeLifecycle& n : *history) {
    if (n.offering.capacity_type != CapacityType::kSpot) continue;
    auto it = offering_index_.find(n.offering.Key());
    if (it == offering_index_.end()) continue;
    const WallTime from = std::max(n.launch_time, since);
    const WallTime to = std::min(n.end_time.value_or(now), now);
    const bool interrupted = n.cause == "interrupted" && n.end_time && *n.end_time <= now;
    risk_.AddHistory(offering_key_[it->second], risk_group_[it->second], from, to, interrupted, now);
    risk_dirty_ = true;
  }
}

void Controller::FlushExposure(WallTime now) {
  for (size_t i = 0; i < unflushed_exposure_h_.size(); ++i) {
    if (unflushed_exposure_h_[i] <= 0) continue;
    risk_.AddExposure(offering_key_[i], risk_group_[i], unflushed_exposure_h_[i], now);
    unflushed_exposure_h_[i] = 0;
  }
}

void Controller::RefreshRisk(WallTime now) {
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
    if (o >= 0) snapshot_.nodes[i].offering.interruptions_per_hour = snapshot_.offerings[static_cast<size_t>(o)].interruptions_per_hour;
  }
  changed_ = true;
}

void Controller::RefreshWork(WallTime) {
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    Node& node = snapshot_.nodes[i];
    NodeInfo& info = node_info_[i];
    const uint64_t v = work_.RunningVersion(node.instance_id);
    if (v == info.running_version) continue;
    info.running_version = v;
    node.running = work_.RunningOn(node.instance_id);
    info.gpus_by_class.clear();
    for (const DemandUnit& u : node.running) info.gpus_by_class[u.workload_class] += UnitGpus(u);
    changed_ = true;
    if (info.notice_deadline) shadows_dirty_ = true;
  }
  const uint64_t pv = work_.PendingVersion();
  if (pv == pending_version_ && !shadows_dirty_) return;
  pending_version_ = pv;
  shadows_dirty_ = false;
  changed_ = true;
  const std::vector<DemandUnit>& pending = work_.Pending();
  const size_t n = std::min(pending.size(), options_.max_pending_units);
  snapshot_.pending.assign(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    if (!node_info_[i].notice_deadline) continue;
    for (const DemandUnit& u : snapshot_.nodes[i].running) {
      snapshot_.pending.push_back(u);
      snapshot_.pending.back().id += "@replace";
    }
  }
}

void Controller::RefreshSignals(WallTime now, TickReport*) {
  signals_ = work_.Signals();
  std::set<std::string> blocked;
  for (const SignalStatus& s : signals_) {
    auto it = policy_.signals.max_staleness.find(s.source);
    const Seconds max_age = it == policy_.signals.max_staleness.end() ? Seconds(120) : it->second;
    if (!s.sampled_at || now - *s.sampled_at > max_age) blocked.insert(s.classes.begin(), s.classes.end());
  }
  std::vector<std::string> list(blocked.begin(), blocked.end());
  if (list != blocked_) {
    blocked_ = list;
    snapshot_.scale_down_blocked_classes = std::move(list);
    changed_ = structure_changed_ = true;
  }
}

void Controller::AccumulateUsage(WallTime now) {
  const std::string month = MonthKey(now);
  if (month != month_key_) {
    month_key_ = month;
    snapshot_.month_to_date_usd = 0;
  }
  if (!last_tick_) {
    last_tick_ = now;
    return;
  }
  const double dt = std::chrono::duration<double>(now - *last_tick_).count();
  last_tick_ = now;
  if (dt <= 0) return;
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    const Node& node = snapshot_.nodes[i];
    snapshot_.month_to_date_usd += node.offering.usd_per_hour * dt / 3600.0;
    NodeInfo& info = node_info_[i];
    // Spot exposure: node-hours at risk, until the node's notice.
    if (info.offering >= 0 && !info.notice_deadline && node.offering.capacity_type == CapacityType::kSpot) {
      unflushed_exposure_h_[static_cast<size_t>(info.offering)] += dt / 3600.0;
    }
    if (store_ == nullptr) continue;
    for (const auto& [cls, gpus] : info.gpus_by_class) info.gpu_seconds[cls] += gpus * dt;
    if (now - info.usage_start >= options_.usage_interval) {
      TickReport ignored;
      Record(FlushUsageFor(i, now), &ignored);
    }
  }
}

Status Controller::FlushUsageFor(size_t index, WallTime now) {
  NodeInfo& info = node_info_[index];
  const Node& node = snapshot_.nodes[index];
  std::vector<UsageRecord> rows;
  int gpu_count = 0;
  if (const InstanceType* t = catalog_.FindInstanceType(node.offering.instance_type)) gpu_count = t->gpu_count;
  const double cap = gpu_count * std::chrono::duration<double>(now - info.usage_start).count();
  for (const auto& [cls, seconds] : info.gpu_seconds) {
    if (seconds <= 0 || now <= info.usage_start) continue;
    const double allocated = std::min(seconds, cap);
    rows.push_back({node.instance_id, cls, "", info.usage_start, now, allocated, allocated});
  }
  info.gpu_seconds.clear();
  info.usage_start = now;
  if (rows.empty() || store_ == nullptr) return Status::Ok();
  return store_->RecordUsage(rows);
}

Status Controller::FlushUsage() {
  const WallTime now = clock_.WallNow();
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    Status s = FlushUsageFor(i, now);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void Controller::AddNode(const Instance& instance, int64_t decision_id, NodeState state) {
  Node node;
  node.id = instance.instance_id;
  node.instance_id = instance.instance_id;
  node.pool = instance.pool;
  node.offering = instance.offering;
  auto it = offering_index_.find(instance.offering.Key());
  int offering = -1;
  if (it != offering_index_.end()) {
    node.offering.usd_per_hour = snapshot_.offerings[it->second].usd_per_hour;
    node.offering.interruptions_per_hour = snapshot_.offerings[it->second].interruptions_per_hour;
    offering = static_cast<int>(it->second);
  }
  node.launch_time = instance.launch_time;
  node.state = state;
  node.labels = instance.tags;
  for (const std::string& label : policy_.disruption.do_not_disrupt_labels) {
    auto l = instance.tags.find(label);
    if (l != instance.tags.end() && l->second == "true") node.do_not_disrupt = true;
  }
  NodeInfo info;
  info.decision_id = decision_id;
  info.offering = offering;
  info.usage_start = clock_.WallNow();
  node_index_[node.instance_id] = snapshot_.nodes.size();
  snapshot_.nodes.push_back(std::move(node));
  node_info_.push_back(std::move(info));
  changed_ = true;
  if (!actuating_) structure_changed_ = true;
}

void Controller::RemoveNode(size_t index, WallTime end, const std::string& cause, TickReport* report) {
  if (store_ != nullptr) {
    Record(FlushUsageFor(index, std::max(end, node_info_[index].usage_start)), report);
    Record(store_->RecordNodeEnd({snapshot_.nodes[index].instance_id, end, cause}), report);
  }
  if (node_info_[index].notice_deadline) shadows_dirty_ = true;
  snapshot_.nodes.erase(snapshot_.nodes.begin() + static_cast<std::ptrdiff_t>(index));
  node_info_.erase(node_info_.begin() + static_cast<std::ptrdiff_t>(index));
  node_index_.clear();
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) node_index_[snapshot_.nodes[i].instance_id] = i;
  changed_ = true;
  if (!actuating_) structure_changed_ = true;
}

void Controller::Actuate(int64_t decision_id, const Plan& plan, TickReport* report) {
  // Nodes this plan adds or removes are what it asked for, not news for the
  // next plan (see idle_replan_interval); failures still count as news.
  actuating_ = true;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    if (plan.launches[i].count > 0) LaunchOne(decision_id, i, plan.launches[i], report);
  }
  for (size_t j = 0; j < plan.terminations.size(); ++j) {
    TerminateOne(decision_id, plan.launches.size() + j, plan.terminations[j], report);
  }
  actuating_ = false;
}

void Controller::LaunchOne(int64_t decision_id, size_t index, const LaunchAction& launch, TickReport* report) {
  const WallTime now = clock_.WallNow();
  report->nodes_requested += launch.count;
  LaunchRequest request;
  request.pool = launch.pool;
  request.count = launch.count;
  request.tags = options_.tags;
  request.tags[kOwnerTag] = launch.pool;
  request.idempotency_token = std::to_string(decision_id) + "-" + std::to_string(index);
  request.tags[kIntentTag] = request.idempotency_token;
  std::set<std::string> keys;
  auto consider = [&](const Offering& o) {
    if (launch.offering.capacity_type == CapacityType::kSpot && o.capacity_type == CapacityType::kOnDemand &&
        !policy_.spot.fallback_to_on_demand)
      return;
    const std::string key = o.Key();
    if (!availability_.IsAvailable(key, now) || !keys.insert(key).second) return;
    request.offerings.push_back(o);
  };
  consider(launch.offering);
  for (const Offering& o : launch.fallbacks) consider(o);
  if (request.offerings.empty()) {
    report->governor.notes.push_back("launch " + std::to_string(index) + ": every offering is marked unavailable");
    return;
  }
  if (options_.dry_run) return;

  int64_t action_id = 0;
  if (store_ != nullptr) {
    ActionRecord a;
    a.decision_id = decision_id;
    a.kind = ActionKind::kLaunch;
    a.idempotency_token = request.idempotency_token;
    a.pool = launch.pool;
    a.offering = request.offerings.front();
    a.count = launch.count;
    a.reason = launch.reason;
    Result<int64_t> id = store_->RecordActionIntent(a);
    if (!id) {
      // Never call the cloud without a durable intent: a crash could launch twice.
      report->errors.push_back(id.error().WithContext("launch intent"));
      return;
    }
    action_id = *id;
  }

  failpoint::Check("launch.before_call");
  Result<LaunchResult> result = cloud_.Launch(request);
  failpoint::Check("launch.after_call");
  if (!result) {
    report->errors.push_back(result.error().WithContext("launch"));
    if (result.error().category() == ErrorCategory::kCapacity) {
      for (const Offering& o : request.offerings) availability_.RecordCapacityError(o.Key(), now);
      ++report->capacity_errors;
    }
    if (store_ != nullptr) {
      Record(store_->RecordActionOutcome(action_id, ActionOutcome::kFailed, result.error().ToString(), {}), report);
    }
    changed_ = structure_changed_ = true;
    return;
  }
  for (const OfferingError& e : result->errors) {
    if (e.error.category() == ErrorCategory::kCapacity) {
      availability_.RecordCapacityError(e.offering_key, now);
      ++report->capacity_errors;
    }
  }
  std::vector<std::string> ids;
  std::set<std::string> succeeded;
  for (const Instance& inst : result->instances) {
    ids.push_back(inst.instance_id);
    if (succeeded.insert(inst.offering.Key()).second) availability_.RecordSuccess(inst.offering.Key());
    if (node_index_.count(inst.instance_id) == 0) AddNode(inst, decision_id, NodeState::kLaunching);
    if (store_ != nullptr) {
      NodeLaunchRecord rec{inst.instance_id, inst.instance_id, inst.pool, inst.offering, 0, inst.launch_time,
                           decision_id,      launch.reason};
      if (const InstanceType* t = catalog_.FindInstanceType(inst.offering.instance_type)) rec.gpu_count = t->gpu_count;
      Record(store_->RecordNodeLaunch(rec), report);
    }
  }
  report->nodes_launched += static_cast<int>(ids.size());
  if (!ids.empty()) governor_.RecordScaleUp(launch.pool, now);
  if (!result->errors.empty()) changed_ = structure_changed_ = true;
  if (store_ != nullptr) {
    const ActionOutcome outcome = static_cast<int>(ids.size()) >= launch.count ? ActionOutcome::kSucceeded
                                  : ids.empty()                                ? ActionOutcome::kFailed
                                                                               : ActionOutcome::kPartial;
    Record(store_->RecordActionOutcome(action_id, outcome, JoinErrors(result->errors), ids), report);
    failpoint::Check("launch.after_outcome");
  }
}

void Controller::RecoverOpenIntents(TickReport* report) {
  if (store_ == nullptr || options_.dry_run) return;
  Result<std::vector<ActionRow>> open = store_->OpenIntents();
  if (!open) {
    report->errors.push_back(open.error().WithContext("reading open intents"));
    recovered_ = false;  // try again next tick
    return;
  }
  const WallTime now = clock_.WallNow();
  // A launch's fallback runs (other capacity type) have their own ClientToken
  // and are not part of the replay below, which sends the chosen offering
  // only: their instances are found by the intent tag instead, so the action
  // row lists every instance the launch made.
  std::map<std::string, std::vector<Instance>> tagged;
  if (std::any_of(open->begin(), open->end(), [](const ActionRow& r) { return r.action.kind == ActionKind::kLaunch; })) {
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
      Record(store_->RecordActionOutcome(row.id, s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
                                         s.ok() ? "completed after a restart" : s.error().ToString(),
                                         s.ok() ? a.instance_ids : std::vector<std::string>{}),
             report);
      if (s.ok()) terminated_.insert(a.instance_ids.begin(), a.instance_ids.end());
      continue;
    }
    if (!row.decision_time || now - *row.decision_time > options_.intent_replay_window) {
      // Too old to send again (the cloud forgets tokens), but what it made
      // carries its intent tag: the row still lists the launch's instances.
      std::vector<std::string> ids;
      for (const Instance& inst : tagged[a.idempotency_token]) {
        ids.push_back(inst.instance_id);
        if (node_index_.count(inst.instance_id) == 0) AddNode(inst, a.decision_id, StateFor(inst.state));
        NodeLaunchRecord rec{inst.instance_id, inst.instance_id, inst.pool, inst.offering, 0, inst.launch_time,
                             a.decision_id,    a.reason};
        if (const InstanceType* t = catalog_.FindInstanceType(inst.offering.instance_type)) rec.gpu_count = t->gpu_count;
        Record(store_->RecordNodeLaunch(rec), report);
      }
      const ActionOutcome outcome = ids.empty()                               ? ActionOutcome::kFailed
                                    : static_cast<int>(ids.size()) >= a.count ? ActionOutcome::kSucceeded
                                                                              : ActionOutcome::kPartial;
      Record(store_->RecordActionOutcome(row.id, outcome,
                                         ids.empty() ? "abandoned after a restart: older than the replay window, "
                                                       "and no instance carries its intent tag"
                                                     : "closed after a restart (older than the replay window): "
                                                       "instances found by their intent tag",
                                         ids),
             report);
      continue;
    }
    LaunchRequest request;
    request.pool = a.pool;
    request.count = a.count;
    request.tags = options_.tags;
    request.tags[kOwnerTag] = a.pool;
    request.tags[kIntentTag] = a.idempotency_token;
    request.idempotency_token = a.idempotency_token;
    request.offerings = {a.offering};
    Result<LaunchResult> result = cloud_.Launch(request);
    failpoint::Check("recover.launch.after_call");
    if (!result) {
      // Not recorded as failed: the next start tries again within the window.
      report->errors.push_back(result.error().WithContext("replaying launch intent " + a.idempotency_token));
      continue;
    }
    std::set<std::string> replayed;
    for (const Instance& inst : result->instances) replayed.insert(inst.instance_id);
    for (const Instance& inst : tagged[a.idempotency_token]) {
      if (replayed.insert(inst.instance_id).second) result->instances.push_back(inst);
    }
    std::vector<std::string> ids;
    for (const Instance& inst : result->instances) {
      ids.push_back(inst.instance_id);
      if (node_index_.count(inst.instance_id) == 0) AddNode(inst, a.decision_id, NodeState::kLaunching);
      NodeLaunchRecord rec{inst.instance_id, inst.instance_id, inst.pool, inst.offering, 0, inst.launch_time,
                           a.decision_id,    a.reason};
      if (const InstanceType* t = catalog_.FindInstanceType(inst.offering.instance_type)) rec.gpu_count = t->gpu_count;
      Record(store_->RecordNodeLaunch(rec), report);
    }
    report->nodes_launched += static_cast<int>(ids.size());
    const ActionOutcome outcome = static_cast<int>(ids.size()) >= a.count ? ActionOutcome::kSucceeded
                                  : ids.empty()                          ? ActionOutcome::kFailed
                                                                         : ActionOutcome::kPartial;
    Record(store_->RecordActionOutcome(row.id, outcome, "completed after a restart " + JoinErrors(result->errors), ids),
           report);
    changed_ = structure_changed_ = true;
  }
}

void Controller::TerminateOne(int64_t decision_id, size_t index, const TerminationAction& term,
                              TickReport* report) {
  const WallTime now = clock_.WallNow();
  auto it = node_index_.find(term.instance_id.empty() ? term.node_id : term.instance_id);
  if (it == node_index_.end()) {
    auto by_node = std::find_if(snapshot_.nodes.begin(), snapshot_.nodes.end(),
                                [&](const Node& n) { return n.id == term.node_id; });
    if (by_node == snapshot_.nodes.end()) return;
    it = node_index_.find(by_node->instance_id);
  }
  const size_t node_pos = it->second;
  const Node& node = snapshot_.nodes[node_pos];
  if (node.do_not_disrupt || options_.dry_run) return;
  const std::string instance_id = node.instance_id;
  int64_t action_id = 0;
  if (store_ != nullptr) {
    ActionRecord a;
    a.decision_id = decision_id;
    a.kind = ActionKind::kTerminate;
    a.idempotency_token = std::to_string(decision_id) + "-" + std::to_string(index);
    a.pool = node.pool;
    a.offering = node.offering;
    a.count = 1;
    a.instance_ids = {instance_id};
    a.reason = term.reason;
    Result<int64_t> id = store_->RecordActionIntent(a);
    if (!id) {
      report->errors.push_back(id.error().WithContext("terminate intent"));
      return;
    }
    action_id = *id;
  }
  const std::string pool = node.pool;
  failpoint::Check("terminate.before_call");
  Status s = cloud_.Terminate({instance_id});
  failpoint::Check("terminate.after_call");
  if (store_ != nullptr) {
    Record(store_->RecordActionOutcome(action_id, s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
                                       s.ok() ? "" : s.error().ToString(), s.ok() ? std::vector<std::string>{instance_id}
                                                                                 : std::vector<std::string>{}),
           report);
    failpoint::Check("terminate.after_outcome");
  }
  if (!s.ok()) {
    report->errors.push_back(s.error().WithContext("terminate " + instance_id));
    return;
  }
  terminated_.insert(instance_id);
  RemoveNode(node_pos, now, term.kind == TerminationKind::kConsolidate ? "consolidated" : "terminated", report);
  ++report->nodes_terminated;
  governor_.RecordScaleDown(pool, now);
}

std::string Controller::SignalsJson(WallTime now) const {
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
  out["blocked_classes"] = blocked_;
  return out.dump();
}

std::string Controller::SummaryJson() const {
  nlohmann::ordered_json out;
  out["pending_units"] = snapshot_.pending.size();
  out["nodes"] = snapshot_.nodes.size();
  out["offerings"] = snapshot_.offerings.size();
  out["unavailable_offerings"] = last_unavailable_;
  out["month_to_date_usd"] = snapshot_.month_to_date_usd;
  return out.dump();
}

}  // namespace gpuscaler
