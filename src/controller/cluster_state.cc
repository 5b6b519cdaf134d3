#include "gpuscaler/controller/cluster_state.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "gpuscaler/controller/learned_state.h"

namespace gpuscaler {
namespace {

double HoursLeftInMonth(WallTime t) {
  return std::chrono::duration<double>(UsageMeter::NextMonthStart(t) - t).count() / 3600.0;
}

// A node on a reservation costs what its slot does: the cloud lists such an
// instance without a price of its own (EC2's DescribeInstances has none).
void PriceAsReserved(const Offering& reserved, Offering* node) {
  node->usd_per_hour = reserved.usd_per_hour;
  node->on_demand_usd_per_hour = reserved.on_demand_usd_per_hour;
}

}  // namespace

ClusterState::ClusterState(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
                           const Catalog& catalog, UsageMeter& usage, ClusterStateOptions options)
    : cloud_(cloud),
      store_(store),
      work_(work),
      usage_(usage),
      options_(std::move(options)),
      book_(catalog, options_.regions, options_.unavailable_base, options_.unavailable_max, clock.WallNow()),
      risk_(book_, {options_.learn_interruption_risk, options_.interruption_risk, options_.risk_refresh_interval}),
      learners_(catalog, options_.interruption_risk.half_life) {
  snapshot_->gpu_models = catalog.gpu_models;
  snapshot_->instance_types = catalog.instance_types;
  snapshot_->offerings = book_.offerings();
}

Snapshot& ClusterState::Writable() {
  if (snapshot_.use_count() > 1) snapshot_ = std::make_shared<Snapshot>(*snapshot_);
  return *snapshot_;
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

bool ClusterState::Observe(const Policy& policy, WallTime now, double month_to_date_usd, NodeActions* node_actions,
                           TickReport* report) {
  Writable();
  snapshot_->time = now;
  snapshot_->month_to_date_usd = month_to_date_usd;
  snapshot_->month_to_date_usd_by_pool = usage_.month_to_date_usd_by_pool();
  snapshot_->month_to_date_usd_by_team = usage_.month_to_date_usd_by_team();
  // Before notices are read: the work that ran since the last tick.
  learners_.lost_work.Accrue(now, snapshot_->nodes);
  // Notices name instances: until the inventory has been listed once (a
  // start, a restart) it is listed first, so a notice of the last minutes
  // finds its node instead of being taken for another cluster's.
  bool listed = false;
  const bool listed_before = inventory_.listed_once();
  if (!listed_before) listed = ReadInstances(policy, now, report);
  ReadInterruptions(policy, now, node_actions, report);
  if (listed_before) listed = ReadInstances(policy, now, report);
  std::vector<NodeMilestone> reached;  // by nodes this process launched, this tick
  if (listed && nodes_ != nullptr) CheckNodeHealth(policy, now, &reached, report);
  if (listed) RemoveRebalanced(now);
  ReadPrices(policy, now, report);
  ReadReservations(policy, now, report);
  if (listed) RetireBlockNodes(policy, now, node_actions, report);
  RefreshWork(&reached);
  learners_.warm_up.Observe(reached);
  report->milestones.insert(report->milestones.end(), reached.begin(), reached.end());
  learners_.signals.Observe(work_.Signals(), policy, now);
  learners_.spot_floor.Observe(policy, now, snapshot_->nodes);
  const LearnedChanges learned = learners_.Publish(policy, now, *snapshot_);
  if (learned.any) MarkChanged(learned.structural);
  snapshot_->hours_left_in_month = HoursLeftInMonth(now);
  PublishWarm(policy, node_actions);
  return listed;
}

void ClusterState::Apply(const ActuationResult& result, const Policy& policy, WallTime now, bool structural,
                         TickReport* report) {
  Writable();
  for (const AvailabilityEvent& e : result.availability_events) {
    if (e.capacity_error) {
      book_.availability().RecordCapacityError(e.offering_key, e.at);
    } else {
      book_.availability().RecordSuccess(e.offering_key);
    }
  }
  for (const LaunchedNode& l : result.launched) {
    if (inventory_.Has(l.instance.instance_id)) continue;
    // A woken warm node's start is no cold launch: its minute to Ready must
    // not teach its family's warm-up (the cold lead time the planner weighs).
    const bool woken = std::find(result.woken.begin(), result.woken.end(), l.instance.instance_id) != result.woken.end();
    AddNode(l.instance, l.state, policy, now, !structural && !woken);
  }
  for (const InFlightLaunch& l : result.in_flight) AddAwaited(l, policy);
  for (const EndedNode& e : result.ended) {
    inventory_.MarkEnded(e.instance_id);
    const std::optional<size_t> i = inventory_.Find(e.instance_id);
    if (!i) continue;
    learners_.disruption.RecordRemoval(now, snapshot_->nodes[*i].pool);
    RemoveNode(*i, now, e.cause, report);
  }
  if (policy.spot.fallback_to_on_demand) {
    // Deadline work probes spot offering by offering (each capacity error
    // marks only its offering): its errors do not pause its class, whose
    // other work would otherwise be kept off spot by a unit that waits for
    // spot anyway.
    for (const std::string& id : result.spot_capacity_error_units) {
      for (const DemandUnit& u : snapshot_->pending) {
        if (u.id == id && !u.deadline)
          learners_.disruption.PauseSpot(u.workload_class, now + policy.spot.fallback_duration);
      }
    }
  }
  for (const std::string& id : result.terminated_elsewhere) inventory_.MarkEnded(id);
  ApplyWarm(result, policy, now, report);
  for (const std::string& id : result.draining) {
    inventory_.SetDraining(id, true);
    if (const std::optional<size_t> i = inventory_.Find(id)) snapshot_->nodes[*i].state = NodeState::kDraining;
  }
  for (const std::string& id : result.kept) {
    inventory_.SetDraining(id, false);
    const std::optional<size_t> i = inventory_.Find(id);
    if (i && snapshot_->nodes[*i].state == NodeState::kDraining && !inventory_.record(*i).notice_deadline)
      snapshot_->nodes[*i].state = NodeState::kReady;
  }
  for (const EndedNode& e : result.ended) inventory_.SetDraining(e.instance_id, false);
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

void ClusterState::ReadInterruptions(const Policy& policy, WallTime now, NodeActions* node_actions,
                                     TickReport* report) {
  Result<std::vector<InterruptionNotice>> notices = cloud_.PollInterruptions();
  if (!notices) {
    report->errors.push_back(notices.error().WithContext("interruption notices"));
    return;
  }
  unacknowledged_notices_.insert(unacknowledged_notices_.end(), notices->begin(), notices->end());
  for (const InterruptionNotice& n : *notices) {
    if (n.rebalance) {
      OnRebalance(n.instance_id, policy, node_actions, report);
      continue;
    }
    ++report->interruption_notices;
    const std::optional<size_t> index = inventory_.Find(n.instance_id);
    if (!index) continue;
    NodeRecord& info = inventory_.record(*index);
    if (info.notice_deadline) continue;
    info.notice_deadline = n.deadline;
    const Node& node = snapshot_->nodes[*index];
    if (node.offering.capacity_type == CapacityType::kSpot && info.offering >= 0) {
      // The failure domain is the risk group (family x zone): spot capacity
      // of one family in one zone goes at once, every size together, so
      // notices on a p3.2xlarge and a p3.16xlarge of one zone are one wave.
      const std::string& domain = book_.risk_group(static_cast<size_t>(info.offering));
      int domain_nodes = 0;
      for (size_t j = 0; j < snapshot_->nodes.size(); ++j) {
        const int o = inventory_.record(j).offering;
        domain_nodes += o >= 0 && snapshot_->nodes[j].state != NodeState::kTerminating &&
                        snapshot_->nodes[j].offering.capacity_type == CapacityType::kSpot &&
                        book_.risk_group(static_cast<size_t>(o)) == domain;
      }
      risk_.RecordNotice(book_, static_cast<size_t>(info.offering), domain_nodes, now);
      // A wave marks the whole domain reclaimed; the snapshot
      // (reclaimed_spot_pools) and the plan's notes say so from this tick's
      // RefreshOfferings on.
      book_.availability().RecordReclaimNotice(
          domain, domain_nodes, now, {policy.spot.reclaim_cooldown, policy.spot.reclaim_cooldown_max});
    }
    // The work source's view, not the snapshot's (refreshed later this tick).
    if (node.offering.capacity_type == CapacityType::kSpot) learners_.lost_work.ChargeInterruption(work_.RunningOn(node.instance_id));
    snapshot_->nodes[*index].state = NodeState::kDraining;
    inventory_.NoteReplacementDemandMoved();
    MarkChanged(true);
    if (nodes_ != nullptr) node_actions->drains.push_back({node.instance_id, n.deadline});
  }
}

bool ClusterState::ReadInstances(const Policy& policy, WallTime now, TickReport* report) {
  for (size_t i = snapshot_->nodes.size(); i-- > 0;) {
    const NodeRecord& info = inventory_.record(i);
    if (info.notice_deadline && *info.notice_deadline <= now) {
      inventory_.MarkEnded(snapshot_->nodes[i].instance_id);
      RemoveNode(i, std::max(*info.notice_deadline, snapshot_->nodes[i].launch_time), "interrupted", report);
      MarkChanged(true);
    }
  }
  if (!inventory_.ListingDue(now, options_.reconcile_interval)) return inventory_.last_listing_ok();
  Result<std::vector<Instance>> listed = cloud_.ListInstances();
  inventory_.Listed(now, listed.ok());
  if (!listed) {
    report->errors.push_back(listed.error().WithContext("listing instances"));
    return false;
  }
  if (warm_.Listed(*listed, policy, now)) MarkChanged(true);
  std::vector<char> seen(snapshot_->nodes.size(), 0);
  std::set<std::string> still_listed;
  for (const Instance& inst : *listed) {
    if (warm_.Has(inst.instance_id)) {
      // A node of a warm pool that is now stopped (its refill state lost to
      // a restart, or stopped by hand) leaves the nodes; its store row stays.
      if (const std::optional<size_t> node = inventory_.Find(inst.instance_id)) {
        report->Record(usage_.EndNode(snapshot_->nodes[*node], now));
        inventory_.Remove(snapshot_->nodes, *node);
        seen.erase(seen.begin() + static_cast<std::ptrdiff_t>(*node));
        MarkChanged(true);
      }
      continue;
    }
    if (inventory_.Ended(inst.instance_id)) {
      still_listed.insert(inst.instance_id);
      continue;
    }
    const std::optional<size_t> known = inventory_.Find(inst.instance_id);
    if (!known && inventory_.placeholders() > 0 && !inventory_.RecordedBeforeStart(inst.instance_id) &&
        ClaimAwaited(inst, policy, now, report)) {
      seen[*inventory_.Find(inst.instance_id)] = 1;
      continue;
    }
    if (!known) {
      AddNode(inst, NodeStateOf(inst.state), policy, now, /*launched_here=*/false);
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
        if (const InstanceType* t = book_.catalog().FindInstanceType(inst.offering.instance_type))
          rec.gpu_count = t->gpu_count;
        report->Record(store_->RecordNodeLaunch(rec));
      }
      continue;
    }
    seen[*known] = 1;
    Node& node = snapshot_->nodes[*known];
    if (node.state == NodeState::kLaunching || node.state == NodeState::kReady) {
      const NodeState s = NodeStateOf(inst.state);
      if (s != node.state) {
        // Launching and ready nodes both take work in a plan: not news.
        node.state = s;
        MarkChanged(s != NodeState::kReady && s != NodeState::kLaunching);
      }
    }
  }
  inventory_.KeepEnded(std::move(still_listed));
  inventory_.ForgetRecordedBeforeStart();  // every instance listed now is known
  for (size_t i = snapshot_->nodes.size(); i-- > 0;) {
    if (seen[i] || inventory_.record(i).placeholder()) continue;
    RemoveNode(i, now, inventory_.record(i).notice_deadline ? "interrupted" : "vanished", report);
    MarkChanged(true);
  }
  if (inventory_.placeholders() > 0) ExpireAwaited(now, report);
  return true;
}

void ClusterState::ReadPrices(const Policy& policy, WallTime now, TickReport* report) {
  const std::vector<PriceMove> moves = book_.ReadPrices(cloud_, now, report);
  if (book_.RefreshStaleness(policy, now, report)) {
    snapshot_->stale_prices = book_.stale_prices();
    MarkChanged(true);
  }
  std::vector<PriceSample> samples;
  for (const PriceMove& m : moves) {
    const Offering& o = book_.offerings()[m.offering];
    MarkChanged(false);
    if (store_ != nullptr) samples.push_back({m.at, o});
    for (Node& n : snapshot_->nodes) {
      if (n.offering.instance_type != o.instance_type || n.offering.zone != o.zone ||
          n.offering.capacity_type != o.capacity_type)
        continue;
      n.offering.usd_per_hour = m.usd_per_hour;
      if (store_ != nullptr && !n.instance_id.empty()) {
        report->Record(store_->RecordNodePrice(n.instance_id, std::max(m.at, n.launch_time), m.usd_per_hour));
      }
    }
  }
  if (!samples.empty()) report->Record(store_->RecordPriceSamples(samples));
  RefreshOfferings(now, !moves.empty());
}

void ClusterState::RefreshOfferings(WallTime now, bool prices_moved) {
  const OfferingChanges marks = book_.RefreshAvailability(now);
  if (marks.any) {
    snapshot_->reclaimed_spot_pools = book_.reclaimed_spot_pools();
    MarkChanged(marks.structural);
  }
  const SpotRiskLearner::Moves learned = risk_.Refresh(book_, now);
  if (learned.rates || learned.shares) {
    for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
      const int o = inventory_.record(i).offering;
      if (o < 0) continue;
      const Offering& bought = book_.offerings()[static_cast<size_t>(o)];
      snapshot_->nodes[i].offering.interruptions_per_hour = bought.interruptions_per_hour;
      snapshot_->nodes[i].offering.co_reclaim_share = bought.co_reclaim_share;
    }
  }
  // A new rate is news for every spot plan; a new co-reclaim share only for
  // gangs, which the next plan prices with it.
  if (learned.rates) MarkChanged(false);
  if (prices_moved || marks.any || learned.rates || learned.shares) PublishOfferings();
}

void ClusterState::ReadReservations(const Policy& policy, WallTime now, TickReport* report) {
  if (!reservations_.Read(cloud_, policy, book_, now, report)) return;
  snapshot_->reservations = reservations_.reservations();
  PublishOfferings();
  for (Node& n : snapshot_->nodes) {
    if (n.offering.capacity_type != CapacityType::kReserved) continue;
    if (const Offering* reserved = reservations_.Find(n.offering.Key())) PriceAsReserved(*reserved, &n.offering);
  }
  MarkChanged(true);
}

void ClusterState::PublishOfferings() {
  snapshot_->offerings = book_.offerings();
  const std::vector<Offering>& reserved = reservations_.offerings();
  snapshot_->offerings.insert(snapshot_->offerings.end(), reserved.begin(), reserved.end());
}

void ClusterState::Restore(const Policy& policy, WallTime now, TickReport* report) {
  if (restored_) return;
  restored_ = true;
  Writable();
  RestoreLearned(now, report);
  RestoreAwaited(policy, now, report);
}

void ClusterState::RestoreLearned(WallTime now, TickReport* report) {
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
    if (!risk_.learning() || n.offering.capacity_type != CapacityType::kSpot) continue;
    if (n.end_time && *n.end_time <= risk_since) continue;
    const int offering = book_.Find(n.offering.Key());
    if (offering < 0) continue;
    const WallTime from = std::max(n.launch_time, risk_since);
    const WallTime to = std::min(n.end_time.value_or(now), now);
    const bool interrupted = n.cause == "interrupted" && n.end_time && *n.end_time <= now;
    risk_.AddHistory(book_, static_cast<size_t>(offering), from, to, interrupted, now);
  }
  learners_.disruption.Restore(std::move(removals));
  ReadLearnedState(now, report);
}

void ClusterState::ReadLearnedState(WallTime now, TickReport* report) {
  if (options_.learned_state_owner.empty() || learned_state_read_) return;
  Result<std::optional<std::string>> saved = store_->LearnedState(options_.learned_state_owner);
  if (!saved) {
    // Retried before the next save: saving first would replace the
    // document with what this process has seen so far.
    report->errors.push_back(saved.error().WithContext("reading learned state"));
    return;
  }
  learned_state_read_ = true;
  if (!*saved) return;
  if (Status s = LearnedStateCodec::Restore(**saved, learners_, book_.availability()); !s.ok()) {
    // Degraded, not fatal: an unreadable document is replaced by the next
    // save, and its parts start from the priors.
    report->errors.push_back(s.error().WithContext("restoring learned state"));
    return;
  }
  saved_marks_ = LearnedStateCodec::Save(learners_, book_.availability(), /*accounts=*/false);
  saved_at_ = now;
  MarkChanged(true);
}

void ClusterState::SaveLearned(WallTime now, TickReport* report) {
  if (store_ == nullptr || options_.learned_state_owner.empty() || !options_.restore_from_store) return;
  ReadLearnedState(now, report);
  if (!learned_state_read_) return;
  std::string marks = LearnedStateCodec::Save(learners_, book_.availability(), /*accounts=*/false);
  const bool due = !saved_at_ || now - *saved_at_ >= options_.learned_state_interval;
  if (marks == saved_marks_ && !due) return;
  const Status s = store_->SaveLearnedState(options_.learned_state_owner, now,
                                            LearnedStateCodec::Save(learners_, book_.availability()));
  if (!s.ok()) {
    report->errors.push_back(s.error().WithContext("saving learned state"));
    return;
  }
  saved_marks_ = std::move(marks);
  saved_at_ = now;
}

void ClusterState::AccumulateExposure(WallTime now) {
  const double hours = risk_.HoursSinceLastExposure(now);
  if (hours <= 0) return;
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    const NodeRecord& info = inventory_.record(i);
    if (info.offering >= 0 && !info.notice_deadline && !info.placeholder() &&
        snapshot_->nodes[i].offering.capacity_type == CapacityType::kSpot) {
      risk_.AddExposure(static_cast<size_t>(info.offering), hours);
    }
  }
}

void ClusterState::RefreshWork(std::vector<NodeMilestone>* reached) {
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    Node& node = snapshot_->nodes[i];
    NodeRecord& info = inventory_.record(i);
    if (info.placeholder()) continue;
    const uint64_t v = work_.RunningVersion(node.instance_id);
    if (v == info.running_version) continue;
    info.running_version = v;
    node.running = work_.RunningOn(node.instance_id);
    if (info.launched_here && !info.first_pod && !node.running.empty()) {
      info.first_pod = true;
      reached->push_back(
          {info.family, "first_pod", std::chrono::duration<double>(snapshot_->time - node.launch_time).count()});
    }
    usage_.SetRunning(node.instance_id, node.running);
    MarkChanged(false);
    if (info.work_is_replacement_demand()) inventory_.NoteReplacementDemandMoved();
  }
  const uint64_t pv = work_.PendingVersion();
  const bool replacements_moved = inventory_.TakeReplacementDemandMoved();
  if (pv == pending_version_ && !replacements_moved) return;
  pending_version_ = pv;
  MarkChanged(false);
  const std::vector<DemandUnit>& pending = work_.Pending();
  const size_t n = std::min(pending.size(), options_.max_pending_units);
  snapshot_->pending.assign(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < snapshot_->nodes.size(); ++i) {
    if (!inventory_.record(i).work_is_replacement_demand()) continue;
    for (const DemandUnit& u : snapshot_->nodes[i].running) {
      snapshot_->pending.push_back(u);
      snapshot_->pending.back().id += "@replace";
    }
  }
}

void ClusterState::AddNode(const Instance& instance, NodeState state, const Policy& policy, WallTime now,
                           bool launched_here) {
  NodeRecord record;
  Node node = NodeFor(instance, state, policy, &record);
  record.launched_here = launched_here;
  usage_.AddNode(node.instance_id, now);
  inventory_.Add(snapshot_->nodes, std::move(node), std::move(record));
}

Node ClusterState::NodeFor(const Instance& instance, NodeState state, const Policy& policy, NodeRecord* info) const {
  Node node;
  node.id = instance.instance_id;
  node.instance_id = instance.instance_id;
  node.pool = instance.pool;
  node.offering = instance.offering;
  if (const int o = book_.Find(instance.offering.Key()); o >= 0) {
    node.offering.usd_per_hour = book_.offerings()[static_cast<size_t>(o)].usd_per_hour;
    node.offering.interruptions_per_hour = book_.offerings()[static_cast<size_t>(o)].interruptions_per_hour;
    info->offering = o;
  } else if (const Offering* reserved = reservations_.Find(instance.offering.Key())) {
    PriceAsReserved(*reserved, &node.offering);
  }
  const InstanceType* type = book_.catalog().FindInstanceType(instance.offering.instance_type);
  info->family = type != nullptr ? type->FamilyOrName() : instance.offering.instance_type;
  node.launch_time = instance.launch_time;
  node.state = inventory_.Draining(instance.instance_id) ? NodeState::kDraining : state;
  node.labels = instance.tags;
  node.placement_group = instance.placement_group;
  for (const std::string& label : policy.disruption.do_not_disrupt_labels) {
    auto l = instance.tags.find(label);
    if (l != instance.tags.end() && l->second == "true") node.do_not_disrupt = true;
  }
  return node;
}

void ClusterState::ApplyWarm(const ActuationResult& result, const Policy& policy, WallTime now, TickReport* report) {
  for (const Instance& inst : result.warm_filling) warm_.AddFilling(inst, now);
  for (const Instance& inst : result.parked) {
    // Its store row stays open: stopped, it is billed at its volumes' price.
    if (const std::optional<size_t> node = inventory_.Find(inst.instance_id)) {
      learners_.disruption.RecordRemoval(now, snapshot_->nodes[*node].pool);
      report->Record(usage_.EndNode(snapshot_->nodes[*node], now));
      inventory_.Remove(snapshot_->nodes, *node);
    }
    warm_.AddFilling(inst, now);
    warm_.MarkStopping(inst.instance_id, now);
  }
  for (const std::string& id : result.warm_stopped) warm_.MarkStopping(id, now);
  for (const std::string& id : result.woken) warm_.Woken(id);
  for (const EndedNode& e : result.ended) warm_.Remove(e.instance_id);
  if (!result.warm_filling.empty() || !result.warm_stopped.empty() || !result.woken.empty() ||
      !result.parked.empty())
    snapshot_->warm_nodes = warm_.Publish(*snapshot_, policy);
}

void ClusterState::PublishWarm(const Policy& policy, NodeActions* node_actions) {
  snapshot_->volume_usd_per_gib_hour = book_.catalog().volume_usd_per_gib_hour;
  snapshot_->default_volume_gib = book_.catalog().default_volume_gib;
  if (warm_.size() == 0 && snapshot_->warm_nodes.empty()) return;
  std::vector<WarmNode> warm = warm_.Publish(*snapshot_, policy);
  const auto key = [](const std::vector<WarmNode>& v) {
    std::vector<std::pair<std::string, bool>> k;
    for (const WarmNode& w : v) k.emplace_back(w.instance_id, w.stopped);
    return k;
  };
  if (key(warm) != key(snapshot_->warm_nodes)) MarkChanged(true);
  snapshot_->warm_nodes = std::move(warm);
  if (node_actions != nullptr) warm_.NodeActionsDue(*snapshot_, policy, nodes_, node_actions);
}

void ClusterState::RemoveNode(size_t index, WallTime end, const std::string& cause, TickReport* report) {
  const Node& node = snapshot_->nodes[index];
  const NodeRecord& record = inventory_.record(index);
  if (!record.placeholder()) {
    report->Record(usage_.EndNode(node, end));
    if (store_ != nullptr) report->Record(store_->RecordNodeEnd({node.instance_id, end, cause}));
  }
  if (record.notice_deadline || !record.repair.empty()) inventory_.NoteReplacementDemandMoved();
  inventory_.Remove(snapshot_->nodes, index);
}

std::string ClusterState::SignalsJson(WallTime now) const { return learners_.signals.Json(now); }

std::string ClusterState::SummaryJson() const {
  nlohmann::ordered_json out;
  out["pending_units"] = snapshot_->pending.size();
  out["nodes"] = snapshot_->nodes.size();
  out["offerings"] = snapshot_->offerings.size();
  out["unavailable_offerings"] = book_.unavailable();
  out["month_to_date_usd"] = snapshot_->month_to_date_usd;
  return out.dump();
}

}  // namespace gpuscaler
