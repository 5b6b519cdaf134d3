// Replays through the production controller: invariants on every replay,
// determinism, the workload model's interruption accounting, golden totals
// of the baselines and gpuscaler's own decisions on a small committed trace
// (sim/testdata/golden/).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/trace_readers.h"
#include "sim/workload.h"
#include "sim/sim_test_jobs.h"

namespace gpuscaler::sim {
namespace {

using testing::TrainingJob;

Scenario Demo(int days, uint64_t seed = 1) {
  Result<Scenario> s = MakeBuiltinScenario("demo", seed, days, BuiltinCatalog());
  EXPECT_TRUE(s.ok());
  s->catalog_source = "built-in";
  return std::move(s).value();
}

void CheckInvariants(const Scenario& s, const RunResult& r) {
  SCOPED_TRACE(r.name);
  double sum = 0;
  for (const InstanceBill& b : r.bills) {
    sum += b.usd;
    EXPECT_GE(b.billed_seconds, 60);
  }
  EXPECT_NEAR(r.total_cost_usd, sum, 1e-6);
  EXPECT_NEAR(r.cost_by_capacity_type.at("on-demand") + r.cost_by_capacity_type.at("spot"), r.total_cost_usd, 1e-6);
  EXPECT_EQ(r.jobs_completed + r.jobs_unfinished, static_cast<int64_t>(s.trace.jobs.size()));
  EXPECT_LE(r.busy_gpu_hours, r.paid_gpu_hours + 1e-6);
  EXPECT_GE(r.gpu_hours_lost, 0);
  EXPECT_EQ(r.controller_errors, 0);
}

TEST(Replay, EveryRunKeepsTheInvariants) {
  const Scenario s = Demo(1);
  std::vector<std::string> names = {"gpuscaler"};
  for (const std::string& b : BaselineNames()) names.push_back(b);
  Result<std::vector<RunResult>> results = RunMany(s, names, {});
  ASSERT_TRUE(results.ok()) << results.error().ToString();
  ASSERT_EQ(results->size(), 6u);
  for (const RunResult& r : *results) {
    CheckInvariants(s, r);
    if (r.name == "gpuscaler" || r.name == "on-demand") {
      EXPECT_EQ(r.hard_budget_violations, 0) << r.name << ": the planner keeps hard budgets";
    }
  }
  // The replay did real work: nodes were bought and most jobs finished.
  for (const RunResult& r : *results) {
    EXPECT_GT(r.total_cost_usd, 0) << r.name;
    EXPECT_GT(r.jobs_completed, r.jobs_unfinished) << r.name;
  }
}

TEST(Replay, SameInputsGiveIdenticalResults) {
  const Scenario s = Demo(1, 3);
  RunOptions o;
  o.timeseries = true;
  Result<std::vector<RunResult>> a = RunMany(s, {"gpuscaler", "karpenter"}, o);
  Result<std::vector<RunResult>> b = RunMany(s, {"gpuscaler", "karpenter"}, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(FormatJson(s, *a), FormatJson(s, *b));
  EXPECT_EQ(FormatTimeseriesCsv(*a), FormatTimeseriesCsv(*b));
  // And another seed gives another load.
  const Scenario other = Demo(1, 4);
  EXPECT_NE(other.trace.jobs.size() == s.trace.jobs.size() ? other.trace.jobs[5].submit : Seconds(-1),
            s.trace.jobs[5].submit);
}

TEST(Replay, BuiltinScenariosHaveTheAdvertisedSize) {
  Result<Scenario> big = MakeBuiltinScenario("scale-30d-100k", 1, std::nullopt, BuiltinCatalog());
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->trace.jobs.size(), 100000u);
  EXPECT_EQ(big->horizon, Seconds(30 * 86400));
  EXPECT_FALSE(MakeBuiltinScenario("nope", 1, std::nullopt, BuiltinCatalog()).ok());
}

// Job "train" of class "training", submitted at 0, for the workload tests.
TraceJob TrainJob(Seconds duration, int gpus) {
  TraceJob j;
  j.submit = Seconds(0);
  j.duration = duration;
  j.unit.id = "train";
  j.unit.workload_class = "training";
  j.unit.gpus = gpus;
  return j;
}

// A g5.12xlarge (4 GPUs) in us-east-1a of pool "p", for the workload tests.
Instance G5Node(const std::string& id, CapacityType capacity_type) {
  Instance node;
  node.instance_id = id;
  node.pool = "p";
  node.offering.instance_type = "g5.12xlarge";
  node.offering.zone = "us-east-1a";
  node.offering.capacity_type = capacity_type;
  return node;
}

// One job, one node, an interruption: the work since the last checkpoint is
// lost and the job is requeued with the rest.
TEST(Workload, InterruptionLosesWorkSinceTheLastCheckpointAndRequeues) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j = TrainJob(Seconds(3 * 3600), 4);
  j.unit.checkpoint_interval = Seconds(1800);
  j.unit.restart_cost = Seconds(600);
  trace.jobs = {j};
  Policy policy;
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, policy, t0);

  Instance node = G5Node("i-1", CapacityType::kSpot);
  w.OnReady(node, 4);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  ASSERT_EQ(w.running(), 1);
  ASSERT_EQ(w.RunningOn("i-1").size(), 1u);

  // 70 minutes in: two checkpoints (60 min) saved, 10 minutes lost.
  w.OnNotice("i-1", t0 + Seconds(70 * 60));
  w.OnGone("i-1", t0 + Seconds(70 * 60), /*interrupted=*/true);
  EXPECT_EQ(w.running(), 0);
  EXPECT_EQ(w.queued(), 1);
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 4.0 * 600, 1e-9);
  EXPECT_EQ(w.stats().requeues, 1);

  // On a new node it needs the restart cost plus the 120 minutes left.
  node.instance_id = "i-2";
  w.OnReady(node, 4);
  const WallTime t1 = t0 + Seconds(80 * 60);
  w.Schedule(t1);
  ASSERT_EQ(w.running(), 1);
  EXPECT_EQ(*w.NextEventTime(), t1 + Seconds(600 + 120 * 60));
  w.RunEventsUntil(*w.NextEventTime());
  EXPECT_EQ(w.stats().jobs_completed, 1);
  const auto classes = w.ClassResults(t1 + Seconds(10 * 3600));
  EXPECT_EQ(classes.at("training").waits_s, std::vector<int64_t>{10 * 60});
}

// The planner is told what is left of a job's real duration, or, with
// UseClassRuntimes (sim --runtime-knowledge class), its class's
// shape.expected_runtime, as the daemon tells it; the job still runs its
// real duration either way.
TEST(Workload, UnitsCarryTheJobsRemainingRuntimeOrTheirClasssExpectedRuntime) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j = TrainJob(Seconds(5 * 3600), 1);
  trace.jobs = {j};
  j.unit.id = "other";
  j.unit.workload_class = "unnamed";
  trace.jobs.push_back(j);
  Policy policy;
  WorkloadClassPolicy training;
  training.name = "training";
  training.expected_runtime = Seconds(2 * 3600);
  policy.classes = {training};
  const WallTime t0 = FromUnixSeconds(1782000000);
  Instance node = G5Node("i-1", CapacityType::kOnDemand);

  for (bool class_runtimes : {false, true}) {
    SCOPED_TRACE(class_runtimes ? "class" : "exact");
    Workload w(trace, catalog, policy, t0);
    if (class_runtimes) w.UseClassRuntimes(policy);
    w.RunEventsUntil(t0);
    w.Schedule(t0);
    ASSERT_EQ(w.Pending().size(), 2u);
    const Seconds training_runtime = class_runtimes ? Seconds(2 * 3600) : Seconds(5 * 3600);
    const Seconds unnamed_runtime = class_runtimes ? Seconds(3600) : Seconds(5 * 3600);
    for (const DemandUnit& u : w.Pending())
      EXPECT_EQ(u.expected_runtime, u.id == "train" ? training_runtime : unnamed_runtime) << u.id;

    w.OnReady(node, 4);
    w.Schedule(t0);
    ASSERT_EQ(w.RunningOn("i-1").size(), 2u);
    for (const DemandUnit& u : w.RunningOn("i-1"))
      EXPECT_EQ(u.expected_runtime, u.id == "train" ? training_runtime : unnamed_runtime) << u.id;
    EXPECT_EQ(*w.NextEventTime(), t0 + Seconds(5 * 3600));
  }
}

// A job that checkpoints on notice keeps its progress at the notice: only
// the two minutes between notice and reclaim are lost, where the periodic
// checkpoint alone would lose 40 minutes.
TEST(Workload, AJobThatCheckpointsOnNoticeLosesOnlyTheNoticeWindow) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j = TrainJob(Seconds(3 * 3600), 4);
  j.unit.checkpoint_interval = Seconds(3600);
  j.unit.checkpoint_on_notice = true;
  j.unit.restart_cost = Seconds(600);
  trace.jobs = {j};
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, Policy{}, t0);
  Instance node = G5Node("i-1", CapacityType::kSpot);
  w.OnReady(node, 4);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  ASSERT_EQ(w.running(), 1);

  // Notice at 98 minutes (saved: 98), reclaimed at 100 (lost: 2).
  w.OnNotice("i-1", t0 + Seconds(98 * 60));
  w.OnGone("i-1", t0 + Seconds(100 * 60), /*interrupted=*/true);
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 4.0 * 120, 1e-9);

  // The next run needs its restart cost plus the 82 minutes after the notice.
  node.instance_id = "i-2";
  w.OnReady(node, 4);
  const WallTime t1 = t0 + Seconds(110 * 60);
  w.Schedule(t1);
  ASSERT_EQ(w.running(), 1);
  EXPECT_EQ(*w.NextEventTime(), t1 + Seconds(600 + 82 * 60));

  // A later interruption without a notice first (the node vanishes) falls
  // back to the periodic checkpoint of that run: nothing saved at 30 min.
  w.OnGone("i-2", t1 + Seconds(600 + 30 * 60), /*interrupted=*/true);
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 4.0 * (120 + 30 * 60), 1e-9);
}

TEST(Workload, NonInterruptibleWorkNeverLandsOnSpot) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j;
  j.duration = Seconds(600);
  j.unit.id = "eval";
  j.unit.gpus = 1;
  j.unit.interruptible = false;
  trace.jobs = {j};
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, Policy{}, t0);
  Instance spot;
  spot.instance_id = "i-spot";
  spot.offering.instance_type = "g5.xlarge";
  spot.offering.capacity_type = CapacityType::kSpot;
  w.OnReady(spot, 1);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  EXPECT_EQ(w.running(), 0);
  Instance od = spot;
  od.instance_id = "i-od";
  od.offering.capacity_type = CapacityType::kOnDemand;
  w.OnReady(od, 1);
  w.Schedule(t0 + Seconds(60));
  EXPECT_EQ(w.running(), 1);
  EXPECT_EQ(w.RunningOn("i-od").size(), 1u);
}

// With the floor split on (the greedy and karpenter runs), a job of a split
// class binds only to a node labelled with one of its class's domains, in a
// domain with the fewest of the class's jobs among those that have nodes:
// 0.5 → domains "1" (on-demand) and "2" (spot), so three jobs go 2 / 1 and
// none to the unlabelled node listed first; a job of an interruptible class
// with max_spot_share 0 goes on on-demand only.
TEST(Workload, SplitFloorClassesBindsAJobOnlyInADomainWithTheFewestOfItsClass) {
  const Catalog catalog = BuiltinCatalog();
  Policy policy;
  WorkloadClassPolicy inference;
  inference.name = "inference";
  inference.max_spot_share = 0.5;
  WorkloadClassPolicy batch;
  batch.name = "batch";
  batch.max_spot_share = 0;
  policy.classes = {inference, batch};
  Trace trace;
  for (int i = 0; i < 3; ++i) {
    TraceJob j;
    j.duration = Seconds(3600);
    j.unit.id = "inf" + std::to_string(i);
    j.unit.workload_class = "inference";
    j.unit.gpus = 1;
    trace.jobs.push_back(j);
  }
  TraceJob b = trace.jobs[0];
  b.unit.id = "batch";
  b.unit.workload_class = "batch";
  trace.jobs.push_back(b);
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, policy, t0);
  w.SplitFloorClasses(policy);
  auto ready = [&](const std::string& id, CapacityType cap, const std::string& domain) {
    Instance n;
    n.instance_id = id;
    n.offering.instance_type = "g5.12xlarge";
    n.offering.capacity_type = cap;
    if (!domain.empty()) n.tags["capacity-spread/inference"] = domain;
    w.OnReady(n, 4);
  };
  ready("i-none", CapacityType::kSpot, "");
  ready("i-od", CapacityType::kOnDemand, "1");
  ready("i-spot", CapacityType::kSpot, "2");
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  EXPECT_EQ(w.running(), 4);
  std::map<std::string, std::vector<std::string>> on;
  for (const std::string id : {"i-none", "i-od", "i-spot"}) {
    for (const DemandUnit& u : w.RunningOn(id)) on[id].push_back(u.id);
  }
  EXPECT_EQ(on["i-none"], std::vector<std::string>{});
  EXPECT_EQ(on["i-od"], (std::vector<std::string>{"inf0", "inf2", "batch"}));
  EXPECT_EQ(on["i-spot"], (std::vector<std::string>{"inf1"}));
}

// A job no offering can hold never runs, and the result says why, in the
// planner's words; a job that fits runs.
TEST(Replay, SaysWhyEachJobThatNeverRanStayedQueued) {
  Trace trace;
  TraceJob fits;
  fits.duration = Seconds(600);
  fits.unit.id = "fits";
  fits.unit.gpus = 1;
  TraceJob too_big = fits;
  too_big.unit.id = "sixteen-gpus";
  too_big.unit.gpus = 16;  // no node has 16 GPUs
  trace.jobs = {fits, too_big};
  Scenario s = MakeTraceScenario(std::move(trace), {}, BuiltinCatalog(), DefaultPolicy(), 1, 1);
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(spec.ok());
  const RunResult r = RunScenario(s, *spec);
  EXPECT_EQ(r.jobs_completed, 1);
  ASSERT_EQ(r.never_started.size(), 1u);
  EXPECT_EQ(r.never_started.begin()->second, 1);
  EXPECT_EQ(r.never_started.begin()->first.rfind("no-offering-fits: no allowed instance type holds 16 GPU(s)", 0), 0u) << r.never_started.begin()->first;
  const std::string table = FormatSummaryTable(s, {r});
  EXPECT_NE(table.find("never ran (gpuscaler): 1 x no-offering-fits"), std::string::npos) << table;
}

// A market where spot capacity goes per pool, all at once: eight 1-GPU
// training jobs of 6 hours, one pool (g6.xlarge spot) per zone, zone a the
// cheapest, and at 3 hours zone a's capacity drops to 0 (every spot node
// there interrupted with its notice) for 10 minutes. With spot piled into
// the cheapest pool the drop takes every job's work since its checkpoint;
// with spot.max_pool_share 0.25 it takes two jobs' at most. After the drop
// the pool is marked reclaimed, so no spot node is launched there for the
// 30-minute cooldown, although capacity is back after 10.
// Eight 1-GPU jobs of class "training", 6 hours each, all at the start.
Trace EightSixHourTrainingJobs() {
  Trace trace;
  for (int i = 0; i < 8; ++i) trace.jobs.push_back(TrainingJob(i, Seconds(0), Seconds(6 * 3600)));
  return trace;
}

// One pool "gpu" of these types and zones, one interruptible class
// "training" (1-hour checkpoints, 6-hour jobs).
Policy TrainingOnOnePool(std::vector<std::string> instance_types, std::vector<std::string> zones) {
  Policy policy = DefaultPolicy();
  NodePoolPolicy pool;
  pool.name = "gpu";
  pool.instance_types = std::move(instance_types);
  pool.zones = std::move(zones);
  policy.pools = {pool};
  WorkloadClassPolicy training;
  training.name = "training";
  training.checkpoint_interval = Seconds(3600);
  training.expected_runtime = Seconds(6 * 3600);
  policy.classes = {training};
  return policy;
}

// The replay of the trace on the market for `days` by `run` (gpuscaler or a
// baseline), no background hazard (the market's drops are the only reclaims).
RunResult RunWithoutBackgroundHazard(const Trace& trace, const SpotMarket& market, const Policy& policy, int days = 1,
                                     const std::string& run = "gpuscaler") {
  Scenario s = MakeTraceScenario(trace, market, BuiltinCatalog(), policy, 1, days);
  s.cloud.hazard_by_family.clear();
  Result<RunSpec> spec = MakeRunSpec(run, s, nullptr);
  EXPECT_TRUE(spec.ok());
  RunResult r = RunScenario(s, *spec);
  CheckInvariants(s, r);
  return r;
}

// The same with spot.max_pool_share set.
RunResult RunWithPoolShare(const Trace& trace, const SpotMarket& market, const Policy& policy,
                           double max_pool_share) {
  Policy p = policy;
  p.spot.max_pool_share = max_pool_share;
  return RunWithoutBackgroundHazard(trace, market, p);
}

TEST(Replay, ACorrelatedPoolReclaimLosesLessWorkUnderAPoolShareCap) {
  const Trace trace = EightSixHourTrainingJobs();
  SpotMarket market;
  for (const char* zone : {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}) {
    PricePoint price;
    price.instance_type = "g6.xlarge";
    price.zone = zone;
    price.usd_per_hour = std::string(zone) == "us-east-1a" ? 0.30 : 0.35;
    market.prices.push_back(price);
  }
  market.availability = {{Seconds(3 * 3600 + 90), "g6.xlarge", "us-east-1a", 0},
                         {Seconds(3 * 3600 + 690), "g6.xlarge", "us-east-1a", 1000}};
  const Policy policy = TrainingOnOnePool({"g6.xlarge"}, {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"});

  auto run = [&](double max_pool_share) { return RunWithPoolShare(trace, market, policy, max_pool_share); };
  const RunResult piled = run(1.0);
  const RunResult spread = run(0.25);
  auto spot_in_zone_a = [](const RunResult& r) {
    int n = 0;
    for (const InstanceBill& b : r.bills) n += b.offering_key == "g6.xlarge/us-east-1a/spot";
    return n;
  };
  EXPECT_GE(spot_in_zone_a(piled), 8) << "all eight first went to the cheapest pool";
  EXPECT_GE(piled.interruptions, 8);
  EXPECT_LE(spread.interruptions, 2);
  EXPECT_GT(piled.gpu_hours_lost, 0);
  EXPECT_LT(spread.gpu_hours_lost, piled.gpu_hours_lost / 2);
  EXPECT_EQ(spread.jobs_completed, 8);
  EXPECT_EQ(piled.jobs_completed, 8);
  // The reclaimed pool is not re-entered during its cooldown (30 minutes
  // from the notices, 3 h 1.5 min in), though capacity is back at 3 h 11.5 min.
  const WallTime start = MakeTraceScenario(trace, market, BuiltinCatalog(), policy, 1, 1).start;
  for (const RunResult* r : {&piled, &spread}) {
    for (const InstanceBill& b : r->bills) {
      if (b.offering_key != "g6.xlarge/us-east-1a/spot") continue;
      const Seconds at = std::chrono::duration_cast<Seconds>(b.launch - start);
      EXPECT_FALSE(at > Seconds(3 * 3600 + 90) && at < Seconds(3 * 3600 + 90 + 1800))
          << r->name << ": a spot node in the reclaimed pool launched " << at.count() << " s in";
    }
  }
}

// A zone's spot capacity of one family goes at once, every size together:
// the pool share cap is per family x zone, so spreading a class over two
// sizes of one family in the cheapest zone does not get past it.
TEST(Replay, ACorrelatedDropOfEverySizeInAZoneTakesNoMoreThanTheClassCap) {
  const Trace trace = EightSixHourTrainingJobs();
  const std::vector<std::string> zones = {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"};
  SpotMarket market;
  for (const std::string& zone : zones) {
    for (const char* type : {"g5.xlarge", "g5.2xlarge"}) {
      PricePoint price;
      price.instance_type = type;
      price.zone = zone;
      // Zone a is the cheapest for both sizes, so without a cap every unit
      // goes there, and with a per-size cap the second size would take
      // what the first may not.
      price.usd_per_hour = zone == "us-east-1a" ? (std::string(type) == "g5.xlarge" ? 0.30 : 0.31) : 0.45;
      market.prices.push_back(price);
    }
  }
  const Seconds drop_at(3 * 3600 + 90);
  for (const char* type : {"g5.xlarge", "g5.2xlarge"}) {
    market.availability.push_back({drop_at, type, "us-east-1a", 0});
    market.availability.push_back({drop_at + Seconds(600), type, "us-east-1a", 1000});
  }
  const Policy policy = TrainingOnOnePool({"g5.xlarge", "g5.2xlarge"}, zones);

  auto run = [&](double max_pool_share) { return RunWithPoolShare(trace, market, policy, max_pool_share); };
  const WallTime start = MakeTraceScenario(trace, market, BuiltinCatalog(), policy, 1, 1).start;
  // Spot GPUs of the class in zone a when the drop came (every one of them
  // is reclaimed by it).
  auto in_zone_a_at_drop = [&](const RunResult& r) {
    int gpus = 0;
    for (const InstanceBill& b : r.bills) {
      const bool zone_a = b.offering_key.find("/us-east-1a/spot") != std::string::npos;
      if (zone_a && b.launch <= start + drop_at && b.end > start + drop_at) gpus += b.gpu_count;
    }
    return gpus;
  };
  const RunResult piled = run(1.0);
  const RunResult capped = run(0.5);
  EXPECT_EQ(in_zone_a_at_drop(piled), 8) << "without a cap all eight units are in the cheapest zone";
  EXPECT_GE(piled.interruptions, 8);
  EXPECT_GT(in_zone_a_at_drop(capped), 0) << "the drop must hit the capped run too";
  EXPECT_LE(in_zone_a_at_drop(capped), 4) << "half of the class's 8 GPUs, over both sizes of the zone";
  EXPECT_LE(capped.interruptions, 4);
  EXPECT_LT(capped.gpu_hours_lost, piled.gpu_hours_lost);
  EXPECT_EQ(capped.jobs_completed, 8);
}

// The lost-work budget (classes[].max_lost_work_share) on a market whose
// one spot pool flaps: zone a's g6.xlarge spot capacity drops to 0 for 10
// minutes every 90 minutes, while 1-GPU training jobs of 2 hours (1-hour
// checkpoints) arrive every 10 minutes for 9 hours. Without a budget new
// work goes back to spot once each reclaim's cooldown is over and the next
// drop takes its work since the last checkpoint again; with a budget of 2 %
// of the class's GPU-hours, the first wave spends it (each job on spot
// charged half a checkpoint interval, against the few GPU-hours run so far)
// and the class's new work goes to on-demand for the rest of the run.
TEST(Replay, ALostWorkBudgetKeepsAClassOffAFlappingSpotPoolAfterItIsSpent) {
  Trace trace;
  for (int i = 0; i < 54; ++i) trace.jobs.push_back(TrainingJob(i, Seconds(i * 600), Seconds(2 * 3600)));
  SpotMarket market;
  PricePoint price;
  price.instance_type = "g6.xlarge";
  price.zone = "us-east-1a";
  price.usd_per_hour = 0.30;
  market.prices.push_back(price);
  for (int k = 1; k <= 7; ++k) {
    const Seconds drop(k * 5400 + 90);
    market.availability.push_back({drop, "g6.xlarge", "us-east-1a", 0});
    market.availability.push_back({drop + Seconds(600), "g6.xlarge", "us-east-1a", 1000});
  }
  const Policy policy = TrainingOnOnePool({"g6.xlarge"}, {"us-east-1a"});
  auto run = [&](double budget) {
    Policy p = policy;
    p.classes[0].max_lost_work_share = budget;
    p.content_hash = PolicyContentHash(p);
    Scenario s = MakeTraceScenario(trace, market, BuiltinCatalog(), p, 1, 1);
    s.cloud.hazard_by_family.clear();
    Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
    EXPECT_TRUE(spec.ok());
    RunResult r = RunScenario(s, *spec);
    CheckInvariants(s, r);
    return std::make_pair(s.start, r);
  };
  const auto [start, free] = run(1.0);
  const RunResult budget = run(0.02).second;
  auto spot_launched_after = [&](const RunResult& r, Seconds at) {
    int n = 0;
    for (const InstanceBill& b : r.bills)
      n += b.offering_key == "g6.xlarge/us-east-1a/spot" && b.launch > start + at;
    return n;
  };
  const Seconds first_drop(5400 + 90);
  // With the budget every spot node went in the first wave.
  for (const InstanceBill& b : budget.bills) {
    if (b.offering_key == "g6.xlarge/us-east-1a/spot") {
      EXPECT_LE(b.end, start + first_drop + Seconds(180));
    }
  }
  EXPECT_GT(budget.interruptions, 0) << "the first wave must hit the budget run too";
  EXPECT_GT(free.interruptions, budget.interruptions) << "without a budget, later waves take work too";
  EXPECT_GT(spot_launched_after(free, first_drop), 0) << "without a budget spot is re-entered";
  EXPECT_EQ(spot_launched_after(budget, first_drop), 0) << "no spot once the budget is spent";
  EXPECT_LT(budget.gpu_hours_lost, free.gpu_hours_lost);
  EXPECT_EQ(free.jobs_completed, 54);
  EXPECT_EQ(budget.jobs_completed, 54);
}

// The floor held on average (classes[].spot_share_window): one 1-GPU replica
// at a time, each for 50 minutes of every hour, for two days, in a class with a 30 %
// on-demand floor. Held at every placement, a lone replica is always on
// on-demand (0.7 x 1 GPU < 1). Held on average over 6 hours, the controller's
// credit sends a replica to spot while the class held more than 30 % on
// on-demand and keeps the next on on-demand while it held less: about 30 % of
// the GPU-hours end on on-demand, and the bill falls.
Trace OneReplicaAtATime() {
  Trace trace;
  for (int i = 0; i < 48; ++i) trace.jobs.push_back(TrainingJob(i, Seconds(i * 3600), Seconds(3000)));
  return trace;
}

TEST(Replay, AFloorHeldOnAverageSendsALoneReplicaToSpotAboutSevenTimesInTen) {
  const Trace trace = OneReplicaAtATime();
  Policy policy = TrainingOnOnePool({"g6.xlarge"}, {"us-east-1a"});
  policy.classes[0].max_spot_share = 0.7;
  auto run = [&](Seconds window) {
    Policy p = policy;
    p.classes[0].spot_share_window = window;
    p.content_hash = PolicyContentHash(p);
    return RunWithoutBackgroundHazard(trace, {}, p, 3);
  };
  auto on_demand_share = [](const RunResult& r) {
    double on_demand = 0, all = 0;
    for (const InstanceBill& b : r.bills) {
      const double gpu_s = double(b.billed_seconds) * b.gpu_count;
      all += gpu_s;
      if (b.capacity_type == CapacityType::kOnDemand) on_demand += gpu_s;
    }
    return all > 0 ? on_demand / all : 0.0;
  };
  const RunResult every_placement = run(Seconds(0));
  const RunResult averaged = run(Seconds(6 * 3600));
  EXPECT_EQ(on_demand_share(every_placement), 1.0);
  EXPECT_GT(on_demand_share(averaged), 0.2);
  EXPECT_LT(on_demand_share(averaged), 0.45) << averaged.total_cost_usd << " vs " << every_placement.total_cost_usd;
  EXPECT_LT(averaged.total_cost_usd, 0.8 * every_placement.total_cost_usd);
  EXPECT_EQ(every_placement.jobs_completed, 48);
  EXPECT_EQ(averaged.jobs_completed, 48);
}

// The window is gpuscaler's: the greedy and Karpenter baselines hold the
// floor by their capacity-spread split whatever it says, so their bills on
// the same trace do not move when a policy sets one.
TEST(Replay, BaselinesHoldTheFloorTheirOwnWayWhateverTheWindow) {
  Policy policy = TrainingOnOnePool({"g6.xlarge"}, {"us-east-1a"});
  policy.classes[0].max_spot_share = 0.7;
  for (const char* name : {"greedy", "karpenter"}) {
    SCOPED_TRACE(name);
    std::vector<double> totals;
    for (Seconds window : {Seconds(0), Seconds(6 * 3600)}) {
      Policy p = policy;
      p.classes[0].spot_share_window = window;
      p.content_hash = PolicyContentHash(p);
      totals.push_back(RunWithoutBackgroundHazard(OneReplicaAtATime(), {}, p, 3, name).total_cost_usd);
    }
    EXPECT_EQ(totals[0], totals[1]);
  }
}

// The budget is the controller's, for gpuscaler: the baselines run the
// policy without it, so their rows do not move when a policy sets one.
TEST(Replay, BaselinesRunThePolicyWithoutItsLostWorkBudget) {
  Policy p = TrainingOnOnePool({"g6.xlarge"}, {"us-east-1a"});
  p.classes[0].max_lost_work_share = 0.002;
  p.content_hash = PolicyContentHash(p);
  const Scenario s = MakeTraceScenario(EightSixHourTrainingJobs(), {}, BuiltinCatalog(), p, 1, 1);
  for (const char* name : {"greedy", "karpenter", "on-demand"}) {
    Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->policy.classes[0].max_lost_work_share, 1.0) << name;
  }
  for (const char* name : {"gpuscaler", "gpuscaler-reactive"}) {
    Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->policy.classes[0].max_lost_work_share, 0.002) << name;
  }
}

std::string GoldenDir() { return std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/golden/"; }

// small_jobs.csv, DemoPolicy, built-in catalog, seed 11, 1 day, g5/g6 spot
// hazard 0.3 per node-hour, price walk on.
Scenario GoldenScenario() {
  Result<Trace> trace = ReadTrace(GoldenDir() + "small_jobs.csv", TraceFormat::kGpuscalerJobs);
  EXPECT_TRUE(trace.ok()) << trace.error().ToString();
  Scenario s = MakeTraceScenario(std::move(trace).value(), {}, BuiltinCatalog(), DemoPolicy(), 11, 1);
  s.cloud.hazard_by_family = {{"g5", 0.3}, {"g6", 0.3}};
  s.cloud.price_walk.enabled = true;
  return s;
}

// Checks the greedy baselines' totals on `s` against `file` (lines "name
// cost completed unfinished interruptions").
void CheckGoldenTotals(const Scenario& s, const std::string& file) {
  Result<std::vector<RunResult>> results = RunMany(s, {"karpenter", "greedy", "cluster-autoscaler"}, {});
  ASSERT_TRUE(results.ok());

  std::map<std::string, std::vector<double>> want;
  std::ifstream in(file);
  ASSERT_TRUE(in.good()) << "missing " << file;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    std::string name;
    double cost, completed, unfinished, interruptions;
    row >> name >> cost >> completed >> unfinished >> interruptions;
    want[name] = {cost, completed, unfinished, interruptions};
  }
  std::ostringstream actual;
  for (const RunResult& r : *results) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%s %.4f %lld %lld %d\n", r.name.c_str(), r.total_cost_usd,
                  static_cast<long long>(r.jobs_completed), static_cast<long long>(r.jobs_unfinished),
                  r.interruptions);
    actual << buf;
  }
  for (const RunResult& r : *results) {
    CheckInvariants(s, r);
    if (r.name == "on-demand") continue;
    ASSERT_EQ(want.count(r.name), 1u) << "actual:\n" << actual.str();
    EXPECT_NEAR(r.total_cost_usd, want[r.name][0], 1e-3) << "actual:\n" << actual.str();
    EXPECT_EQ(r.jobs_completed, static_cast<int64_t>(want[r.name][1])) << "actual:\n" << actual.str();
    EXPECT_EQ(r.jobs_unfinished, static_cast<int64_t>(want[r.name][2])) << "actual:\n" << actual.str();
    EXPECT_EQ(r.interruptions, static_cast<int>(want[r.name][3])) << "actual:\n" << actual.str();
  }
}

// Golden totals for the baselines whose code lives in sim/ (the demo
// policy's inference class has an on-demand floor, which the greedy and
// karpenter baselines split).
TEST(Replay, GoldenTotalsOnTheSmallCommittedTrace) {
  CheckGoldenTotals(GoldenScenario(), GoldenDir() + "expected.txt");
}

// Without a floor the baselines run as they did before they split floors:
// expected_no_floor.txt holds the totals of the demo policy from before
// (which ignored its floor, so they are those of the policy without), the
// karpenter line since its replace is carried out.
TEST(Replay, GoldenTotalsWithoutAFloorAreThoseOfTheBaselinesBeforeTheSplit) {
  Scenario s = GoldenScenario();
  for (WorkloadClassPolicy& c : s.policy.classes) {
    if (c.interruptible) c.max_spot_share = 1.0;
  }
  s.policy.content_hash = PolicyContentHash(s.policy);
  CheckGoldenTotals(s, GoldenDir() + "expected_no_floor.txt");
}

// The greedy and karpenter baselines keep the demo policy's 40 % on-demand
// floor for `inference` over a replay: GPUs of the class's running units on
// on-demand nodes, summed over the ticks, against all of its GPUs.
TEST(Replay, GreedyBaselinesHoldTheOnDemandFloorOverAReplay) {
  const Scenario s = GoldenScenario();
  for (const std::string name : {"greedy", "karpenter"}) {
    SCOPED_TRACE(name);
    Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(spec.ok());
    Replay replay(s, *spec);
    double on_demand = 0, all = 0;
    while (!replay.done()) {
      if (!replay.Step()) continue;
      for (const Node& n : replay.controller().snapshot().nodes) {
        for (const DemandUnit& u : n.running) {
          if (u.workload_class != "inference") continue;
          all += GpuShare(u);
          if (n.offering.capacity_type == CapacityType::kOnDemand) on_demand += GpuShare(u);
        }
      }
    }
    replay.Finish();
    ASSERT_GT(all, 0);
    EXPECT_GE(on_demand / all, 0.4) << on_demand << " of " << all;
  }
}

// One line per decision that asked for something: its virtual time, each
// launch (count, pool, offering) and termination (instance, kind), and the
// fleet's hourly cost after it.
std::string DescribeDecision(WallTime t, const Plan& plan) {
  std::ostringstream out;
  out << ToUnixSeconds(t);
  for (const LaunchAction& l : plan.launches) {
    if (l.count > 0) out << " +" << l.count << " " << l.pool << " " << l.offering.Key();
  }
  for (const TerminationAction& term : plan.terminations) {
    out << " -" << term.instance_id << " " << static_cast<int>(term.kind);
  }
  char cost[40];
  std::snprintf(cost, sizeof(cost), " cost_after=%.4f", plan.cost_after_usd_per_hour);
  out << cost;
  return out.str();
}

// Pins gpuscaler's own plans: every decision of a replay of the committed
// trace, and its totals. A planner or controller change that alters a
// decision fails here; when the change is intended, regenerate the file with
// GPUSCALER_UPDATE_GOLDEN=1 and review the difference.
TEST(Replay, GoldenDecisionsOfGpuscalerOnTheSmallCommittedTrace) {
  const std::string dir = GoldenDir();
  Scenario s = GoldenScenario();
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(spec.ok());
  Replay replay(s, *spec);
  std::string actual;
  TickReport tick;
  while (!replay.done()) {
    if (!replay.Step(&tick) || !tick.planned) continue;
    const bool acts = !tick.plan.terminations.empty() ||
                      std::any_of(tick.plan.launches.begin(), tick.plan.launches.end(),
                                  [](const LaunchAction& l) { return l.count > 0; });
    if (acts) actual += DescribeDecision(tick.time, tick.plan) + "\n";
  }
  const RunResult r = replay.Finish();
  CheckInvariants(s, r);
  char total[200];
  std::snprintf(total, sizeof(total), "total %.4f %lld %lld %d\n", r.total_cost_usd,
                static_cast<long long>(r.jobs_completed), static_cast<long long>(r.jobs_unfinished), r.interruptions);
  actual += total;

  const std::string path = dir + "gpuscaler_decisions.txt";
  if (const char* update = std::getenv("GPUSCALER_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path << " (GPUSCALER_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_GT(std::count(actual.begin(), actual.end(), '+'), 0) << "the replay launched nothing: the pin pins nothing";
  EXPECT_EQ(actual, want.str());
}

}  // namespace
}  // namespace gpuscaler::sim
