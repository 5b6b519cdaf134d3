#include "sim/runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/solver/deadline_hold.h"
#include "gpuscaler/solver/planner.h"
#include "sim/baselines.h"
#include "sim/workload.h"

namespace gpuscaler::sim {

std::string RunIdPrefix(const std::string& name) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof(buf), "i-%02x", h & 0xffu);
  return buf;
}

Percentiles ComputePercentiles(std::vector<int64_t>* values) {
  Percentiles p;
  p.count = static_cast<int64_t>(values->size());
  if (values->empty()) return p;
  std::sort(values->begin(), values->end());
  auto rank = [&](double q) {
    const size_t n = values->size();
    size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    k = std::clamp<size_t>(k, 1, n);
    return static_cast<double>((*values)[k - 1]);
  };
  p.p50 = rank(0.50);
  p.p95 = rank(0.95);
  p.p99 = rank(0.99);
  return p;
}

Replay::Replay(const Scenario& s, RunSpec spec, RunOptions options)
    : scenario_(s),
      spec_(std::move(spec)),
      options_(std::move(options)),
      world_(s, spec_.policy, RunIdPrefix(spec_.name), ControllerOptions::ForSimulation(spec_.policy).max_pending_units) {
  result_.name = spec_.name;
  result_.policy_name = spec_.policy.name;
  if (spec_.split_floor_classes) world_.work().SplitFloorClasses(spec_.policy);
  world_.work().SetGangAdmission(spec_.gang_admission);
  ControllerOptions copt = ControllerOptions::ForSimulation(spec_.policy);
  copt.source = "sim:" + spec_.name;
  if (spec_.unavailable_for) copt.unavailable_base = copt.unavailable_max = *spec_.unavailable_for;
  copt.regions = s.regions;
  if (options_.adjust_controller) options_.adjust_controller(copt);
  controller_ = std::make_unique<Controller>(world_.clock(), world_.cloud(), options_.store, world_.work(), s.catalog,
                                             spec_.policy, copt, spec_.planner);
  if (HasForecasts(spec_.policy)) {
    result_.forecast = spec_.forecast;
    if (spec_.forecast == ForecastSource::kOracle) {
      std::vector<std::string> classes;
      for (const WorkloadClassPolicy& c : spec_.policy.classes) {
        if (c.forecast) classes.push_back(c.name);
      }
      oracle_ = std::make_unique<TrueDemand>(s.trace, s.start, classes);
      controller_->forecaster().SetOracle(oracle_.get());
    }
  }
  total_ticks_ = std::max<int64_t>(1, s.horizon / world_.tick());
  progress_every_ = std::max<int64_t>(1, total_ticks_ / 200);
  if (options_.store != nullptr) {
    // Each replay is its own run of the store, named after the policy or
    // baseline, so runs sharing a file are reported apart. Its cloud is the
    // catalog's, tagged as the simulated cloud tags (the launch request's
    // tags and the pool's).
    Result<int64_t> run = options_.store->BeginRun(
        RunRecord{.name = spec_.name, .source = "sim", .policy_hash = spec_.policy.content_hash, .started = s.start});
    RunCloud cloud;
    cloud.name = s.catalog.provider;
    cloud.instance_tags = copt.tags;
    for (const NodePoolPolicy& pool : spec_.policy.pools) cloud.pool_tags[pool.name][kOwnerTag] = pool.name;
    if (!run || !options_.store->RecordRunCloud(cloud).ok()) ++result_.controller_errors;
  }
}

Replay::~Replay() = default;

bool Replay::Step(TickReport* tick) {
  if (finished_ || !world_.RunUntilTick()) return false;
  TickReport report = controller_->Tick();
  world_.AfterTick();
  AfterTick(world_.now(), report);
  if (tick != nullptr) *tick = std::move(report);
  return true;
}

void Replay::AfterTick(WallTime t, const TickReport& report) {
  RunResult& r = result_;
  ++r.ticks;
  r.planner_calls += report.planned ? 1 : 0;
  r.controller_errors += static_cast<int64_t>(report.errors.size());
  if (report.planned) {
    for (const UnplacedUnit& u : report.plan.unplaced)
      last_unplaced_[u.unit_id] = std::string(ToString(u.reason)) + ": " + u.detail;
  }

  // Hard budgets, against the cloud's actual spend rate.
  const Policy& policy = spec_.policy;
  const double rate = world_.cloud().CurrentUsdPerHour();
  bool violated = false;
  if (policy.budget.global.hard && policy.budget.global.hourly_usd && rate > *policy.budget.global.hourly_usd + 1e-9)
    violated = true;
  if (!policy.budget.per_pool.empty()) {
    std::map<std::string, double> by_pool;
    for (const Node& n : controller_->snapshot().nodes) by_pool[n.pool] += n.offering.usd_per_hour;
    for (const auto& [pool, cap] : policy.budget.per_pool) {
      if (cap.hard && cap.hourly_usd && by_pool[pool] > *cap.hourly_usd + 1e-9) violated = true;
    }
  }
  if (policy.budget.global.hard && policy.budget.global.monthly_usd &&
      (t - scenario_.start) % Seconds(3600) == Seconds(0)) {
    const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
    const std::string m =
        std::to_string(static_cast<int>(ymd.year())) + "-" + std::to_string(static_cast<unsigned>(ymd.month()));
    const double so_far = world_.cloud().CostUntil(t);
    if (m != month_) {
      month_ = m;
      month_start_cost_ = so_far;
    }
    if (so_far - month_start_cost_ > *policy.budget.global.monthly_usd + 1e-9) violated = true;
  }
  if (violated) ++r.hard_budget_violations;
  CountReservedUse(t);

  if (options_.timeseries) {
    TimePoint p;
    p.time = t;
    static_cast<FleetCounts&>(p) = CountFleet(controller_->snapshot());
    p.queued_jobs = world_.work().queued();
    p.running_jobs = world_.work().running();
    p.usd_per_hour = rate;
    p.planned = report.planned;
    r.timeseries.push_back(p);
  }
  if (options_.progress && r.ticks % progress_every_ == 0) {
    options_.progress(static_cast<double>(r.ticks) / static_cast<double>(total_ticks_));
  }
}

void Replay::CountReservedUse(WallTime t) {
  const SimCloud& cloud = world_.cloud();
  const std::vector<Reservation>& reservations = scenario_.cloud.reservations;
  const WallTime from = last_reserved_count_ == WallTime{} ? scenario_.start : last_reserved_count_;
  last_reserved_count_ = t;
  if (reservations.empty() || t <= from) return;
  double open_gpus = 0;
  int open_slots = 0;
  int used_slots = 0;
  for (size_t i = 0; i < reservations.size(); ++i) {
    const int open = cloud.ReservedSlotsOpen(i, t);
    if (open == 0) continue;
    const InstanceType* type = scenario_.catalog.FindInstanceType(reservations[i].instance_type);
    open_gpus += double(open) * (type != nullptr ? type->gpu_count : 0);
    open_slots += open;
    used_slots += std::min(open, cloud.ReservedInUse(i));
  }
  if (open_slots == 0) return;
  const Snapshot& s = controller_->snapshot();
  double demand = 0;
  for (const DemandUnit& u : s.pending) demand += GpuShare(u);
  for (const Node& n : s.nodes)
    for (const DemandUnit& u : n.running) demand += GpuShare(u);
  if (demand + 1e-9 < open_gpus) return;
  const double hours = static_cast<double>((t - from).count()) / 3600.0;
  result_.reserved_slot_hours_when_demand_exceeds += hours * open_slots;
  result_.reserved_used_hours_when_demand_exceeds += hours * used_slots;
}

RunResult Replay::Finish() {
  RunResult& r = result_;
  if (finished_) return r;
  finished_ = true;
  const WallTime end = std::max(std::min(world_.end(), now()), scenario_.start);
  world_.clock().AdvanceTo(end);  // usage is flushed at `end`
  if (options_.store != nullptr) {
    Status flushed = controller_->FlushUsage();
    if (!flushed.ok()) ++r.controller_errors;
    if (!options_.store->EndRun(end).ok()) ++r.controller_errors;
  }
  world_.Close(end);
  SimCloud& cloud = world_.cloud();
  Workload& work = world_.work();

  r.bills = cloud.Bills(end);
  r.reservations = cloud.ReservationUses(end);
  r.cost_by_capacity_type["on-demand"] = 0;
  r.cost_by_capacity_type["spot"] = 0;
  r.cost_by_capacity_type["reserved"] = 0;
  // The cloud's total, not the sum of the bills: a cloud that forgets ended
  // instances (SimCloudConfig::forget_ended_after) still counts their cost.
  r.total_cost_usd = cloud.CostUntil(end);
  for (const InstanceBill& b : r.bills) {
    r.cost_by_capacity_type[std::string(ToString(b.capacity_type))] += b.usd;
    r.paid_gpu_hours += b.gpu_count * static_cast<double>(b.billed_seconds) / 3600.0;
  }
  const WorkloadStats& ws = work.stats();
  r.busy_gpu_hours = ws.busy_gpu_seconds / 3600.0;
  r.gpu_hours_lost = ws.lost_gpu_seconds / 3600.0;
  r.gang_starts = ws.gang_starts;
  r.jobs_taken_back = ws.jobs_taken_back;
  r.jobs_taken_back_runtime_known = ws.jobs_taken_back_runtime_known;
  r.partial_gang_idle_gpu_hours = ws.partial_gang_idle_gpu_seconds / 3600.0;
  std::vector<int64_t> gang_waits = work.GangWaits(end);
  r.gang_wait_s = ComputePercentiles(&gang_waits);
  r.utilization = r.paid_gpu_hours > 0 ? r.busy_gpu_hours / r.paid_gpu_hours : 0;
  r.requeues = ws.requeues;
  r.launches = cloud.launched();
  for (const InstanceBill& b : r.bills) {
    r.warm_wakes += b.wakes;
    r.warm_stopped_usd += b.stopped_usd;
    if (b.capacity_type == CapacityType::kSpot) r.warm_spot_wakes += b.wakes;
    r.warm_interrupted_stops += b.interrupted_stops;
  }
  r.terminations = cloud.terminated();
  r.interruptions = cloud.interrupted();
  r.peak_nodes = cloud.peak_by_offering_and_pool();
  std::vector<int64_t> all;
  for (auto& [cls, stats] : work.ClassResults(end)) {
    r.jobs_completed += stats.completed;
    r.jobs_unfinished += stats.unfinished;
    all.insert(all.end(), stats.waits_s.begin(), stats.waits_s.end());
    r.queue_wait_s_by_class[cls] = ComputePercentiles(&stats.waits_s);
    if (stats.deadlines) r.deadlines_by_class[cls] = *stats.deadlines;
  }
  r.queue_wait_s = ComputePercentiles(&all);
  for (const std::string& id : work.NeverStarted()) {
    auto why = last_unplaced_.find(id);
    ++r.never_started[why == last_unplaced_.end() ? "never in the planner's pending window" : why->second];
  }
  r.jobs_total = static_cast<int64_t>(scenario_.trace.jobs.size());
  if (options_.progress) options_.progress(1.0);
  return r;
}

RunResult RunScenario(const Scenario& s, const RunSpec& spec, const RunOptions& options) {
  Replay replay(s, spec, options);
  while (!replay.done()) replay.Step();
  return replay.Finish();
}

bool HasForecasts(const Policy& policy) {
  return std::any_of(policy.classes.begin(), policy.classes.end(),
                     [](const WorkloadClassPolicy& c) { return c.forecast.has_value(); });
}

const std::vector<std::string>& RunNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"gpuscaler", "gpuscaler-held", "gpuscaler-reactive", "gpuscaler-oracle"};
    for (const std::string& b : BaselineNames()) n.push_back(b);
    return n;
  }();
  return names;
}

Result<RunSpec> MakeRunSpec(const std::string& name, const Scenario& scenario, const RunResult* on_demand) {
  RunSpec spec;
  spec.name = name;
  spec.policy = scenario.policy;
  spec.forecast = scenario.forecast;
  if (name == "gpuscaler") return spec;
  if (name == "gpuscaler-oracle") {
    if (!HasForecasts(scenario.policy)) {
      return Error::InvalidInput("gpuscaler-oracle: policy '" + scenario.policy.name +
                                 "' has no class with a demand forecast (classes[].forecast)");
    }
    spec.forecast = ForecastSource::kOracle;
    return spec;
  }
  if (name == "gpuscaler-held") {
    // The earlier deadline rule: pending work held by its slack, running
    // work never moved (solver/deadline_hold.h, DeadlineStrategy).
    spec.planner = [](const Snapshot& snapshot, const Policy& policy) {
      return MakePlanWithDeadlineStrategy(snapshot, policy, DeadlineStrategy::kHoldPending);
    };
    return spec;
  }
  // Demand forecasts, deferral and the lost-work budget are gpuscaler's: the
  // baselines run the policy without them (as before they existed), so their
  // rows do not move when a policy adds one. Deadlines are still judged for
  // them.
  spec.policy = WithoutWarmCapacity(WithoutDeferral(WithoutForecasts(scenario.policy)));
  if (name == "gpuscaler-reactive") {
    spec.policy = Reactive(scenario.policy);
    return spec;
  }
  spec.policy = WithoutLostWorkBudget(std::move(spec.policy));
  if (name == "on-demand") {
    spec.policy = ForceOnDemand(spec.policy);
    return spec;
  }
  if (name == "karpenter") {
    spec.gang_admission = GangAdmission::kEachPod;
    spec.planner = KarpenterLikePlanner();
    spec.split_floor_classes = true;
    spec.unavailable_for = Seconds(180);  // the AWS provider's unavailable-offerings cache TTL
    return spec;
  }
  if (name == "greedy") {
    spec.gang_admission = GangAdmission::kEachPod;
    spec.planner = CheapestNodeGreedyPlanner();
    spec.split_floor_classes = true;
    return spec;
  }
  if (name == "cluster-autoscaler") {
    spec.gang_admission = GangAdmission::kEachPod;
    spec.policy = ForceOnDemand(spec.policy);
    spec.planner = ClusterAutoscalerLikePlanner();
    return spec;
  }
  if (name == "static-peak") {
    spec.gang_admission = GangAdmission::kEachPod;
    if (on_demand == nullptr) return Error::Internal("static-peak needs the on-demand run first");
    spec.policy = ForceOnDemand(spec.policy);
    spec.planner = StaticPeakPlanner(on_demand->peak_nodes);
    return spec;
  }
  std::string known;
  for (const std::string& n : RunNames()) known += (known.empty() ? "" : ", ") + n;
  return Error::NotFound("unknown baseline '" + name + "' (known: " + known + ")");
}

Result<std::vector<RunResult>> RunMany(const Scenario& scenario, const std::vector<std::string>& names,
                                       const RunOptions& options) {
  std::vector<std::string> order = {"on-demand"};
  for (const std::string& n : names) {
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  }
  std::vector<RunResult> results;
  results.reserve(order.size());  // `od` points into it
  const RunResult* od = nullptr;
  for (const std::string& n : order) {
    Result<RunSpec> spec = MakeRunSpec(n, scenario, od);
    if (!spec) return spec.error();
    results.push_back(RunScenario(scenario, *spec, options));
    if (n == "on-demand") od = &results.front();
  }
  const double base = results.front().total_cost_usd;
  for (RunResult& r : results) {
    if (base > 0) r.savings_vs_on_demand_pct = 100.0 * (base - r.total_cost_usd) / base;
  }
  return results;
}

}  // namespace gpuscaler::sim
