#include "gpuscaler/controller/controller.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <optional>
#include <set>
#include <utility>

#include "gpuscaler/controller/failpoint.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/schedule.h"
#include "gpuscaler/solver/forecast_demand.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

ClusterStateOptions StateOptions(const ControllerOptions& o) {
  ClusterStateOptions s;
  s.regions = o.regions;
  s.max_pending_units = o.max_pending_units;
  s.unavailable_base = o.unavailable_base;
  s.unavailable_max = o.unavailable_max;
  s.learn_interruption_risk = o.learn_interruption_risk;
  s.interruption_risk = o.interruption_risk;
  s.risk_refresh_interval = o.risk_refresh_interval;
  s.risk_history = o.risk_history;
  s.reconcile_interval = o.reconcile_interval;
  s.restore_from_store = o.restore_from_store;
  return s;
}

}  // namespace

ControllerOptions ControllerOptions::ForDaemon() {
  ControllerOptions o;
  o.max_pending_units = 20000;
  o.open_usage_every = Seconds(60);
  return o;
}

ControllerOptions ControllerOptions::ForSimulation(const Policy& policy) {
  ControllerOptions o;
  o.max_pending_units = 2000;
  o.reconcile_interval = Seconds(300);
  o.idle_replan_interval = std::max(Seconds(60), policy.scaling.scale_down_stabilization);
  o.restore_from_store = false;
  return o;
}

Controller::Controller(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
                       const Catalog& catalog, Policy policy, ControllerOptions options, PlannerFn planner)
    : clock_(clock),
      store_(store),
      work_(work),
      policy_(std::move(policy)),
      options_(std::move(options)),
      default_planner_(!planner),
      planner_(planner ? std::move(planner)
                       : PlannerFn([](const Snapshot& s, const Policy& p) { return MakePlan(s, p); })),
      usage_(store, catalog, options_.usage_interval),
      state_(clock, cloud, store, work, catalog, usage_, StateOptions(options_)),
      gate_({options_.reuse_unchanged_plans, options_.max_plan_reuse, options_.idle_replan_interval}),
      actuator_(clock, cloud, store, catalog,
                {options_.tags, options_.token_prefix, options_.dry_run, options_.intent_replay_window}) {
  usage_.SetClassTeams(policy_);
  usage_.SetOpenIntervalCadence(options_.open_usage_every);
}

void Controller::SetClusterNodes(ClusterNodes* nodes) {
  nodes_ = nodes;
  actuator_.SetClusterNodes(nodes);
  state_.SetClusterNodes(nodes);
}

void Controller::SetPolicy(Policy policy) {
  policy_ = std::move(policy);
  usage_.SetClassTeams(policy_);
  gate_.NoteChange(true, true);
}

TickReport Controller::Tick() {
  TickReport report;
  const WallTime now = clock_.WallNow();
  report.time = now;
  if (store_ != nullptr) report.Record(store_->BeginTick());

  // Observe.
  if (store_ != nullptr) {
    if (std::optional<HeldGpuSeconds> held = work_.TakeHeldGpuSeconds(now)) report.Record(usage_.AddHeld(*held));
    if (std::optional<std::vector<LostWork>> lost = work_.TakeLostWork()) report.Record(usage_.RecordLostWork(*lost));
  }
  report.Record(usage_.Accumulate(now, state_.BilledNodes()));
  state_.AccumulateExposure(now);
  if (!risk_restored_) {
    risk_restored_ = true;
    state_.Restore(now, &report);
    state_.RestoreAwaited(policy_, now, &report);
  }
  if (!recovered_) {
    ActuationResult recovered;
    recovered_ = actuator_.Recover(policy_, &recovered, &report);
    state_.Apply(recovered, policy_, now, /*structural=*/true, &report);
  }
  if (nodes_ != nullptr) {
    ActuationResult drained;
    actuator_.FinishDrains(nodes_->TakeEndedDrains(), &drained, &report);
    state_.Apply(drained, policy_, now, /*structural=*/true, &report);
  }
  const bool listed = state_.Observe(policy_, now, usage_.month_to_date_usd(), &report);
  report.Record(usage_.FlushFullIntervals(now, state_.BilledNodes()));
  report.Record(usage_.WriteOpenIntervals(now, state_.BilledNodes()));
  report.blocked_classes = state_.blocked_classes();
  if (!replacements_.empty() || !protecting_.empty()) ProgressReplacements(now, &report);
  const StateChanges observed = state_.TakeChanges();
  gate_.NoteChange(observed.any, observed.structural);
  std::string schedules;
  for (const ScheduleInForce& f : SchedulesInForce(policy_.scaling.schedules, now)) {
    schedules += f.schedule->name + ";";
  }
  if (schedules != schedules_in_force_) {
    schedules_in_force_ = std::move(schedules);
    gate_.NoteChange(true, true);
    gate_.NoteLimitsChange();
  }

  CountMissedDeadlines(now, &report);
  if (UpdateForecasts(now, &report)) {
    gate_.NoteChange(true, false);
    gate_.NoteLimitsChange();
  }

  // Gate.
  const GateVerdict verdict = gate_.Check(state_.snapshot(), policy_, governor_.HasPendingHold(), now);
  report.gate_reason = verdict.reason;
  if (verdict.plan) {
    // Plan, govern, record, act.
    report.planned = true;
    // The planner's input is written out for the audit store while the
    // planner runs: both only read the snapshot, which nothing changes
    // before RecordDecision takes the text.
    std::future<std::string> input_json;
    if (store_ != nullptr && default_planner_) {
      input_json = std::async(std::launch::async,
                              [&snapshot = state_.snapshot()] { return FormatSnapshotJsonLine(snapshot); });
    }
    Plan plan = planner_(state_.snapshot(), policy_);
    gate_.Planned(state_.snapshot(), now);
    // The planner's own plan, recorded with its input when the governor
    // edits it, so a replay is compared with what the planner made.
    std::optional<Plan> planned;
    if (input_json.valid()) planned = plan;
    const bool governed = Govern(listed, now, &plan, &report);
    const bool repaired = AddRepairs(&plan);
    const bool edited = governed || repaired;
    if (RecordDecision(plan, planned ? &*planned : nullptr, edited,
                       input_json.valid() ? input_json.get() : std::string(), listed, now, &report)) {
      const ActuationResult acted =
          actuator_.Act(report.decision_id, plan, state_.snapshot(), policy_, state_.availability(), &report);
      Commit(acted, now, /*structural=*/false, &report);
      for (const PendingReplacement& r : acted.replacements) {
        state_.HoldForReplacement(r.termination.instance_id, true);
        for (const std::string& id : r.replacement_ids) state_.Protect(id, true);
        protecting_[r.termination.instance_id] = r.replacement_ids;
        replacements_.push_back(r);
      }
    } else {
      // Intents would name a decision the store does not have (the local id
      // may even be another decision's, and so its tokens): act on nothing
      // and plan again next tick.
      report.governor.notes.push_back("decision not recorded in the audit store: no action this tick");
      gate_.NoteChange(true, true);
    }
    report.plan = std::move(plan);
  }

  // Commit.
  failpoint::Check("tick.before_commit");
  const Status committed = store_ != nullptr ? store_->CommitTick() : Status::Ok();
  report.Record(committed);
  // Notices leave the cloud's queue only once what they did is committed.
  if (committed.ok()) state_.AcknowledgeNotices(&report);
  failpoint::Check("tick.after_commit");
  return report;
}

bool Controller::Govern(bool listed, WallTime now, Plan* plan, TickReport* report) {
  const size_t proposed_terminations = plan->terminations.size();
  const size_t proposed_notes = plan->notes.size();
  const std::string proposed_summary = plan->summary;
  if (!listed) plan->empty_nodes_left_by_pool.clear();
  if (!listed && !plan->terminations.empty()) {
    plan->terminations.clear();
    report->governor.notes.push_back("instance list unavailable: no terminations this tick");
  }
  HoldBlockedTerminations(state_.snapshot(), policy_, plan, &report->governor);
  std::map<std::string, int> per_pool;
  for (const Node& n : state_.snapshot().nodes) {
    if (n.state != NodeState::kTerminating) per_pool[n.pool] += 1;
  }
  GovernorResult g = governor_.Apply(policy_.scaling, per_pool, now, plan);
  report->governor.launches_held = g.launches_held;
  report->governor.terminations_held += g.terminations_held;
  for (std::string& note : g.notes) report->governor.notes.push_back(std::move(note));
  gate_.Governed(*plan, g.launches_held);
  // The plan as governed is what is recorded and acted on: its cost and
  // summary describe it, not the planner's proposal.
  if (g.launches_held > 0 || plan->terminations.size() != proposed_terminations) {
    plan->cost_after_usd_per_hour = PlannedCostAfter(*plan);
  }
  for (const std::string& note : report->governor.notes) plan->notes.push_back("held: " + note);
  plan->summary = SummarizePlan(*plan, state_.snapshot().pending.size());
  // The governor only holds back (launch counts, terminations) and adds
  // notes; each of those shows in one of these.
  return g.launches_held > 0 || g.terminations_held > 0 || plan->terminations.size() != proposed_terminations ||
         plan->notes.size() != proposed_notes || plan->summary != proposed_summary;
}

bool Controller::AddRepairs(Plan* plan) const {
  bool added = false;
  for (TerminationAction& t : state_.Repairs()) {
    const bool planned = std::any_of(plan->terminations.begin(), plan->terminations.end(),
                                     [&](const TerminationAction& p) { return p.instance_id == t.instance_id; });
    if (!planned) {
      plan->terminations.push_back(std::move(t));
      added = true;
    }
  }
  return added;
}

void Controller::ProgressReplacements(WallTime now, TickReport* report) {
  const auto release = [this](const std::string& old_id) {
    auto it = protecting_.find(old_id);
    if (it == protecting_.end()) return;
    for (const std::string& id : it->second) state_.Protect(id, false);
    protecting_.erase(it);
  };
  for (auto it = protecting_.begin(); it != protecting_.end();) {
    const std::string old_id = (it++)->first;
    if (!state_.Has(old_id)) release(old_id);
  }
  ActuationResult done;
  std::vector<PendingReplacement> waiting;
  for (PendingReplacement& r : replacements_) {
    const std::string& old_id = r.termination.instance_id;
    if (!state_.Has(old_id)) continue;  // gone meanwhile (interrupted, vanished)
    const NodePoolPolicy* pool = policy_.FindPool(r.termination.pool);
    const Seconds timeout = pool != nullptr ? pool->registration_timeout : NodePoolPolicy{}.registration_timeout;
    bool ready = true;
    bool lost = false;
    for (const std::string& id : r.replacement_ids) {
      lost |= !state_.Has(id);
      ready &= state_.CanTakeWork(id);
    }
    if (lost || (!ready && now - r.since >= timeout)) {
      report->governor.notes.push_back(old_id + ": its replacement " +
                                       (lost ? std::string("is gone") : "did not become ready in time") +
                                       "; the node stays in service");
      state_.HoldForReplacement(old_id, false);
      release(old_id);
      continue;
    }
    if (!ready) {
      waiting.push_back(std::move(r));
      continue;
    }
    const size_t ended = done.ended.size() + done.draining.size();
    actuator_.FinishReplacement(r, state_.snapshot(), policy_, &done, report);
    if (done.ended.size() + done.draining.size() == ended) {
      state_.HoldForReplacement(old_id, false);
      release(old_id);
    }
  }
  replacements_ = std::move(waiting);
  report->replacements_waiting = static_cast<int>(replacements_.size());
  for (const std::string& pool : done.scaled_down_pools) governor_.RecordScaleDown(pool, now);
  state_.Apply(done, policy_, now, /*structural=*/false, report);
}

bool Controller::RecordDecision(const Plan& plan, const Plan* planned, bool edited, std::string planner_snapshot_json,
                                bool listed, WallTime now, TickReport* report) {
  report->decision_id = ++local_decisions_;
  if (store_ == nullptr) return true;
  const Snapshot& snapshot = state_.snapshot();
  DecisionRecord d;
  d.time = now;
  d.source = options_.source;
  d.policy_name = policy_.name;
  d.policy_hash = policy_.content_hash;
  d.pending_units = static_cast<int>(snapshot.pending.size());
  d.nodes = static_cast<int>(snapshot.nodes.size());
  d.signals_json = state_.SignalsJson(now);
  d.snapshot_summary_json = state_.SummaryJson();
  d.plan_json = FormatPlanJsonLine(plan);
  d.summary = SummarizePlan(plan, snapshot.pending.size());
  d.cost_before_usd_per_hour = plan.cost_before_usd_per_hour;
  d.cost_after_usd_per_hour = plan.cost_after_usd_per_hour;
  d.expected_interruption_usd_per_hour = plan.expected_interruption_usd_per_hour;
  d.scale_down_blocked = !state_.blocked_classes().empty() || !listed;
  if (planned != nullptr) {
    d.planner_snapshot_json = std::move(planner_snapshot_json);
    d.planner_policy = &policy_;
    // Kept when what is acted on differs from what the planner made (the
    // governor held something back, repairs were added).
    if (edited) {
      std::string planner_plan_json = FormatPlanJsonLine(*planned);
      if (planner_plan_json != d.plan_json) d.planner_plan_json = std::move(planner_plan_json);
    }
  }
  Result<int64_t> id = store_->RecordDecision(d);
  if (!id) {
    report->errors.push_back(id.error());
    return false;
  }
  report->decision_id = *id;
  return true;
}

void Controller::Commit(const ActuationResult& result, WallTime now, bool structural, TickReport* report) {
  for (const std::string& pool : result.scaled_up_pools) governor_.RecordScaleUp(pool, now);
  for (const std::string& pool : result.scaled_down_pools) governor_.RecordScaleDown(pool, now);
  state_.Apply(result, policy_, now, structural, report);
  const StateChanges changed = state_.TakeChanges();
  gate_.NoteChange(changed.any, changed.structural);
}

void Controller::CountMissedDeadlines(WallTime now, TickReport* report) {
  const Snapshot& snap = state_.snapshot();
  std::set<std::string> present;
  const auto check = [&](const DemandUnit& u) {
    if (!u.deadline) return;
    present.insert(u.id);
    if (now > *u.deadline && deadlines_missed_.insert(u.id).second) report->deadlines_missed[u.workload_class] += 1;
  };
  for (const DemandUnit& u : snap.pending) check(u);
  for (const Node& n : snap.nodes) {
    for (const DemandUnit& u : n.running) check(u);
  }
  // Units that finished or left are forgotten: the set stays as large as
  // the work in flight.
  std::erase_if(deadlines_missed_, [&present](const std::string& id) { return present.count(id) == 0; });
}

bool Controller::UpdateForecasts(WallTime now, TickReport* report) {
  const Snapshot& snap = state_.snapshot();
  std::vector<std::string> classes;
  for (const WorkloadClassPolicy& c : policy_.classes) {
    if (c.forecast) classes.push_back(c.name);
  }
  forecaster_.Retain(classes);
  if (classes.empty()) {
    forecast_cache_.clear();
    lead_time_cache_.clear();
    const bool had = !snap.forecasts.empty() || !forecast_state_.empty();
    if (!snap.forecasts.empty()) state_.SetForecasts({});
    forecast_state_.clear();
    return had;
  }
  std::map<std::string, double> demand;
  for (const std::string& c : classes) demand[c] = 0;
  const auto count = [&demand](const DemandUnit& u) {
    auto it = demand.find(u.workload_class);
    if (it != demand.end()) it->second += GpuShare(u);
  };
  for (const DemandUnit& u : snap.pending) count(u);
  for (const Node& n : snap.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    for (const DemandUnit& u : n.running) count(u);
  }
  std::vector<DemandForecast> forecasts;
  std::map<std::string, std::string> state;
  bool changed = false;
  for (const WorkloadClassPolicy& c : policy_.classes) {
    if (!c.forecast) continue;
    const double demand_now = demand[c.name];
    const int64_t minute = ToUnixSeconds(now) / 60;
    auto cached = forecast_cache_.find(c.name);
    if (cached != forecast_cache_.end() && cached->second.minute == minute && cached->second.demand == demand_now &&
        cached->second.policy_hash == policy_.content_hash) {
      // Within the minute, with the same demand, the forecast is the same
      // (the history is kept per minute).
      forecaster_.Record(c.name, now, demand_now);
      state[c.name] = forecast_state_[c.name];
      forecasts.push_back(cached->second.forecast);
      continue;
    }
    DemandForecast f;
    f.workload_class = c.name;
    f.demand_gpus = demand_now;
    std::vector<double> quantiles = ForecastQuantileGrid();
    quantiles.push_back(c.forecast->quantile);
    std::sort(quantiles.begin(), quantiles.end());
    quantiles.erase(std::unique(quantiles.begin(), quantiles.end()), quantiles.end());
    // The lead time of the class's cheapest suitable offering: looked up
    // again when the policy or the class's shape changes, else every 5
    // minutes (prices and learned warm-ups move slowly; the scan is over
    // the whole catalog).
    const DemandUnit shape = RepresentativeUnit(snap, c);
    LeadTimeLookup& lookup = lead_time_cache_[c.name];
    const std::string shape_key = std::to_string(GpuShare(shape)) + "/" + std::to_string(shape.cpu_milli) + "/" +
                                  std::to_string(shape.memory_mib) + "/" + std::to_string(shape.min_gpu_memory_mib) +
                                  "/" + shape.mig_profile + "/" + (shape.interruptible ? "i" : "n") + "/" + shape.pool;
    std::string models;
    for (const std::string& m : shape.gpu_models) models += m + ",";
    if (lookup.policy_hash != policy_.content_hash || lookup.shape != shape_key + models ||
        now - lookup.at >= Seconds(300)) {
      const std::optional<SuitableOffering> cheapest = CheapestSuitableOffering(snap, policy_, c, shape);
      lookup.found = cheapest.has_value();
      lookup.lead_time = cheapest ? LeadTimeOf(snap, *cheapest->offering, *cheapest->type) : Seconds(0);
      lookup.policy_hash = policy_.content_hash;
      lookup.shape = shape_key + models;
      lookup.at = now;
    }
    f.lead_time = lookup.lead_time;
    f.horizon = c.forecast->horizon.value_or(f.lead_time);
    if (!lookup.found && !c.forecast->horizon) {
      f.fallback = "no suitable offering to take the lead time from";
    } else {
      // The forecast reads the history before this tick's sample: what it
      // predicts is compared with the present, never fed by it.
      ForecastResult r = forecaster_.Forecast(c.name, now, f.demand_gpus, f.horizon, quantiles);
      f.levels = std::move(r.levels);
      f.fallback = std::move(r.fallback);
    }
    forecaster_.Record(c.name, now, f.demand_gpus);
    std::string key;
    if (f.levels.empty()) {
      // Not the reason: its counts change every minute until the forecast
      // is on, and only the change between off and on is news.
      key = "off";
    } else {
      key = std::to_string(static_cast<int64_t>(std::ceil(ForecastGpusAt(f, c.forecast->quantile) - 1e-6)));
    }
    auto last = forecast_state_.find(c.name);
    const bool was_off = last == forecast_state_.end() || last->second == "off";
    if (f.levels.empty() && (last == forecast_state_.end() || last->second != key)) {
      report->forecast_notes.push_back("class " + c.name + ": forecast off (" + f.fallback + "): planned reactively");
    } else if (!f.levels.empty() && was_off) {
      report->forecast_notes.push_back("class " + c.name + ": forecast on (horizon " + FormatDuration(f.horizon) + ")");
    }
    changed = changed || last == forecast_state_.end() || last->second != key;
    state[c.name] = std::move(key);
    forecast_cache_[c.name] = {minute, demand_now, policy_.content_hash, f};
    forecasts.push_back(std::move(f));
  }
  std::erase_if(forecast_cache_, [&state](const auto& entry) { return state.count(entry.first) == 0; });
  std::erase_if(lead_time_cache_, [&state](const auto& entry) { return state.count(entry.first) == 0; });
  forecast_state_ = std::move(state);
  state_.SetForecasts(std::move(forecasts));
  return changed;
}

Status Controller::FlushUsage() {
  const WallTime now = clock_.WallNow();
  if (store_ != nullptr) {
    if (std::optional<HeldGpuSeconds> held = work_.TakeHeldGpuSeconds(now)) {
      if (Status s = usage_.AddHeld(*held); !s.ok()) return s;
    }
    if (std::optional<std::vector<LostWork>> lost = work_.TakeLostWork()) {
      if (Status s = usage_.RecordLostWork(*lost); !s.ok()) return s;
    }
  }
  return usage_.Flush(now, state_.BilledNodes());
}

}  // namespace gpuscaler
