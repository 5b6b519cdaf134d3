// Replays on spot markets that drop capacity: correlated reclaims under a
// pool share cap, a lost-work budget on a flapping pool, and a floor held on
// average, with the baselines that keep their own floor and no budget.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "sim/replay_test_support.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/sim_test_jobs.h"

namespace gpuscaler::sim::replay_spot_market_test {
namespace {

using testing::CheckInvariants;
using testing::TrainingJob;

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

}  // namespace
}  // namespace gpuscaler::sim::replay_spot_market_test
