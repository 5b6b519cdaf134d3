#include "gpuscaler/controller/controller.h"

#include <algorithm>
#include <future>
#include <optional>
#include <utility>

#include "gpuscaler/controller/failpoint.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {

ControllerOptions ControllerOptions::ForDaemon() {
  ControllerOptions o;
  o.max_pending_units = 20000;
  o.open_usage_every = Seconds(60);
  return o;
}

ControllerOptions ControllerOptions::ForSimulation(const Policy& policy) {
  ControllerOptions o;
  o.max_pending_units = 2000;
  // A pool with warm capacity lists every tick, as the daemon does: a refill
  // is stopped once the listing shows it running, and five minutes of a
  // refill running on would be billed to warm capacity the daemon stops at
  // its first tick after Ready.
  const bool warm = std::any_of(policy.pools.begin(), policy.pools.end(),
                                [](const NodePoolPolicy& p) { return p.warm.has_value(); });
  o.reconcile_interval = warm ? Seconds(0) : Seconds(300);
  o.idle_replan_interval = std::max(Seconds(60), policy.scaling.scale_down_stabilization);
  o.restore_from_store = false;
  return o;
}

Controller::Controller(const Clock& clock, CloudProvider& cloud, AuditStore* store, WorkSource& work,
                       const Catalog& catalog, Policy policy, ControllerOptions options, PlannerFn planner)
    : clock_(clock),
      work_(work),
      policy_(std::move(policy)),
      // MakePlan, not a caller's planner: only its decisions can be replayed.
      recorder_(store, options.source, /*records_planner_input=*/!planner),
      planner_(planner ? std::move(planner)
                       : PlannerFn([](const Snapshot& s, const Policy& p) { return MakePlan(s, p); })),
      usage_(store, catalog, options.usage_interval),
      state_(clock, cloud, store, work, catalog, usage_, static_cast<const ClusterStateOptions&>(options)),
      gate_({options.reuse_unchanged_plans, options.max_plan_reuse, options.idle_replan_interval}),
      actuator_(clock, cloud, store, catalog,
                {options.tags, options.token_prefix, options.dry_run, options.intent_replay_window}) {
  usage_.SetClassTeams(policy_);
  usage_.SetOpenIntervalCadence(options.open_usage_every);
}

void Controller::SetClusterNodes(ClusterNodes* nodes) {
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
  report.Record(recorder_.BeginTick());

  // Observe.
  for (Status& s : MeterMeasuredWork(now)) report.Record(std::move(s));
  report.Record(usage_.Accumulate(now, state_.BilledNodes()));
  state_.AccumulateExposure(now);
  state_.Restore(policy_, now, &report);
  ActuationResult recovered;
  actuator_.Recover(policy_, &recovered, &report);
  actuator_.FinishEndedDrains(&recovered, &report);
  state_.Apply(recovered, policy_, now, /*structural=*/true, &report);
  NodeActions node_actions;
  const bool listed = state_.Observe(policy_, now, usage_.month_to_date_usd(), &node_actions, &report);
  if (!node_actions.empty()) {
    ActuationResult started;
    actuator_.StartNodeActions(node_actions, now, &started, &report);
    state_.Apply(started, policy_, now, /*structural=*/true, &report);
  }
  report.Record(usage_.FlushFullIntervals(now, state_.BilledNodes()));
  report.Record(usage_.WriteOpenIntervals(now, state_.BilledNodes()));
  report.blocked_classes = state_.blocked_classes();
  if (!replacements_.idle()) {
    const ActuationResult done = replacements_.Progress(now, policy_, state_, actuator_, &report);
    for (const std::string& pool : done.scaled_down_pools) governor_.RecordScaleDown(pool, now);
    state_.Apply(done, policy_, now, /*structural=*/false, &report);
  }
  const StateChanges observed = state_.TakeChanges();
  gate_.NoteChange(observed.any, observed.structural);
  gate_.NoteSchedules(policy_, now);

  demand_.CountMissedDeadlines(state_.snapshot(), now, &report);
  ForecastUpdate forecasts = demand_.Update(state_.snapshot(), policy_, now, &report);
  state_.SetForecasts(std::move(forecasts.forecasts));
  if (forecasts.changed) {
    gate_.NoteChange(true, false);
    gate_.NoteLimitsChange();
  }

  // Gate.
  const GateVerdict verdict = gate_.Check(state_.snapshot(), policy_, governor_.HasPendingHold(), now);
  report.gate_reason = verdict.reason;
  if (verdict.plan) PlanAndAct(listed, now, &report);

  // Commit.
  state_.SaveLearned(now, &report);
  failpoint::Check("tick.before_commit");
  const Status committed = recorder_.CommitTick();
  report.Record(committed);
  // Notices leave the cloud's queue only once what they did is committed.
  if (committed.ok()) state_.AcknowledgeNotices(&report);
  failpoint::Check("tick.after_commit");
  return report;
}

void Controller::PlanAndAct(bool listed, WallTime now, TickReport* report) {
  report->planned = true;
  // The planner's input is written out for the audit store while the
  // planner runs: both only read the snapshot, which nothing changes
  // before the recorder takes the text.
  std::future<std::string> input_json;
  if (recorder_.RecordsPlannerInput()) {
    input_json = std::async(std::launch::async,
                            [&snapshot = state_.snapshot()] { return FormatSnapshotJsonLine(snapshot); });
  }
  Plan plan = planner_(state_.snapshot(), policy_);
  gate_.Planned(state_.snapshot(), now);
  // The planner's own plan, recorded with its input when the governor
  // edits it, so a replay is compared with what the planner made.
  std::optional<Plan> planned;
  if (input_json.valid()) planned = plan;
  const bool governed = Govern(listed, now, &plan, report);
  const bool repaired = AddRepairs(&plan);
  // An oracle's forecast (simulation only) is said in the plan it fed; the
  // planner's own plan, recorded beside it, stays what a replay remakes.
  const std::vector<std::string> oracle_notes = demand_.OracleNotes();
  plan.notes.insert(plan.notes.end(), oracle_notes.begin(), oracle_notes.end());
  DecisionToRecord decision{plan, planned ? &*planned : nullptr, governed || repaired || !oracle_notes.empty(),
                            input_json.valid() ? input_json.get() : std::string(), listed};
  if (recorder_.Record(std::move(decision), state_, policy_, now, report)) {
    const ActuationResult acted =
        actuator_.Act(report->decision_id, plan, state_.snapshot(), policy_, state_.availability(), report);
    Commit(acted, now, /*structural=*/false, report);
    replacements_.Start(acted.replacements, state_);
  } else {
    // Intents would name a decision the store does not have (the local id
    // may even be another decision's, and so its tokens): act on nothing
    // and plan again next tick.
    report->governor.notes.push_back("decision not recorded in the audit store: no action this tick");
    gate_.NoteChange(true, true);
  }
  report->plan = std::move(plan);
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
  for (const std::string& note : report->node_notes) plan->notes.push_back("node: " + note);
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

void Controller::Commit(const ActuationResult& result, WallTime now, bool structural, TickReport* report) {
  for (const std::string& pool : result.scaled_up_pools) governor_.RecordScaleUp(pool, now);
  for (const std::string& pool : result.scaled_down_pools) governor_.RecordScaleDown(pool, now);
  state_.Apply(result, policy_, now, structural, report);
  const StateChanges changed = state_.TakeChanges();
  gate_.NoteChange(changed.any, changed.structural);
}

std::vector<Status> Controller::MeterMeasuredWork(WallTime now) {
  std::vector<Status> outcomes;
  if (!recorder_.RecordsToStore()) return outcomes;
  if (std::optional<HeldGpuSeconds> held = work_.TakeHeldGpuSeconds(now)) outcomes.push_back(usage_.AddHeld(*held));
  if (std::optional<std::vector<LostWork>> lost = work_.TakeLostWork()) {
    outcomes.push_back(usage_.RecordLostWork(*lost));
  }
  return outcomes;
}

Status Controller::FlushUsage() {
  const WallTime now = clock_.WallNow();
  for (Status& s : MeterMeasuredWork(now)) {
    if (!s.ok()) return s;
  }
  return usage_.Flush(now, state_.BilledNodes());
}

}  // namespace gpuscaler
