// classes[].deadline through the controller in a replay (the loop the
// daemon runs): deferrable jobs wait for spot while their slack lasts, run
// on spot when it comes back in time, switch to on-demand when spot stays
// down longer than the slack and still meet their deadlines, and
// gpuscaler-reactive runs the same work at once.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/model/builtin_catalog.h"
#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/sim_test_jobs.h"

namespace gpuscaler::sim {
namespace {

constexpr Seconds kJob{2 * 3600};
constexpr Seconds kDeadline{6 * 3600};

// Four 1-GPU training jobs of 2 hours submitted at the start, deadline 6
// hours; one pool (g6.xlarge, zone a, spot or on-demand); spot capacity is
// 0 from the start until `spot_back`. No random interruptions.
Scenario Deferrable(Seconds spot_back, DeadlineRule rule = DeadlineRule{kDeadline, 0}) {
  Trace trace;
  for (int i = 0; i < 4; ++i) trace.jobs.push_back(testing::TrainingJob(i, Seconds(60), kJob, Seconds(1800)));
  trace.span = Seconds(60);
  SpotMarket market;
  PricePoint price;
  price.instance_type = "g6.xlarge";
  price.zone = "us-east-1a";
  price.usd_per_hour = 0.30;
  market.prices.push_back(price);
  market.availability = {{Seconds(0), "g6.xlarge", "us-east-1a", 0},
                         {spot_back, "g6.xlarge", "us-east-1a", 1000}};
  Policy policy = DefaultPolicy();
  NodePoolPolicy pool;
  pool.name = "gpu";
  pool.instance_types = {"g6.xlarge"};
  pool.zones = {"us-east-1a"};
  policy.pools = {pool};
  WorkloadClassPolicy training;
  training.name = "training";
  training.checkpoint_interval = Seconds(1800);
  training.expected_runtime = kJob;
  training.deadline = rule;
  policy.classes = {training};
  policy.content_hash = PolicyContentHash(policy);
  Scenario s = MakeTraceScenario(trace, market, BuiltinCatalog(), policy, 1, 1);
  s.cloud.hazard_by_family.clear();
  return s;
}

RunResult RunAs(const Scenario& s, const std::string& name) {
  Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
  EXPECT_TRUE(spec.ok());
  return RunScenario(s, *spec);
}

TEST(DeadlineReplay, SpotDownLongerThanTheSlackSwitchesToOnDemandInTimeToMeetTheDeadline) {
  const Scenario s = Deferrable(Seconds(12 * 3600));
  const RunResult held = RunAs(s, "gpuscaler-held");
  const RunResult at_once = RunAs(s, "gpuscaler-reactive");
  for (const RunResult* r : {&held, &at_once}) {
    SCOPED_TRACE(r->name);
    EXPECT_EQ(r->jobs_completed, 4);
    ASSERT_EQ(r->deadlines_by_class.count("training"), 1u);
    EXPECT_EQ(r->deadlines_by_class.at("training").met, 4);
    EXPECT_EQ(r->deadlines_by_class.at("training").missed, 0);
    EXPECT_EQ(r->cost_by_capacity_type.at("spot"), 0);
  }
  // The held jobs waited for spot until their slack ran out (6 h - 2 h of
  // work - lead time and restart - the 30-minute margin - 30 minutes of
  // work an interruption may lose: over 2.5 hours), then ran on on-demand;
  // the reactive run started them within minutes.
  EXPECT_GT(held.queue_wait_s.p50, 9000);
  EXPECT_LT(held.queue_wait_s.p99, (kDeadline - kJob).count());
  EXPECT_LT(at_once.queue_wait_s.p99, 1800);
  const std::string table = FormatSummaryTable(s, {held, at_once});
  EXPECT_NE(table.find("deadlines met / missed / open / unmeetable"), std::string::npos) << table;

  // With the same deadlines as a multiple of their runtimes (3 x 2 h), the
  // jobs state their runtimes and have lines: Uniform Progress holds them
  // only while they keep up with their lines. Idle, they fall behind by the
  // switch margin (lead time, restart, tick) after one and a half margins
  // and go to on-demand, long before the held rule lets them, meeting every
  // deadline too.
  const RunResult uniform = RunAs(Deferrable(Seconds(12 * 3600), DeadlineRule{Seconds(0), 3}), "gpuscaler");
  EXPECT_EQ(uniform.deadlines_by_class.at("training").met, 4);
  EXPECT_LT(uniform.queue_wait_s.p99, held.queue_wait_s.p50);
  EXPECT_EQ(uniform.cost_by_capacity_type.at("spot"), 0);
}

TEST(DeadlineReplay, UniformProgressMovesOnDemandWorkAheadOfItsLineToSpotWhenSpotComesBack) {
  // Spot back after an hour: the held rule waits for it; Uniform Progress
  // starts the jobs on on-demand once they fall behind, and moves them to
  // spot once they are ahead of their lines and spot is up.
  const Scenario s = Deferrable(Seconds(3600), DeadlineRule{Seconds(0), 3});
  const RunResult uniform = RunAs(s, "gpuscaler");
  const RunResult at_once = RunAs(s, "gpuscaler-reactive");
  EXPECT_EQ(uniform.deadlines_by_class.at("training").met, 4);
  EXPECT_GT(uniform.cost_by_capacity_type.at("on-demand"), 0);
  EXPECT_GT(uniform.cost_by_capacity_type.at("spot"), 0);
  EXPECT_LT(uniform.total_cost_usd, at_once.total_cost_usd);
}

TEST(DeadlineReplay, SpotBackWithinTheSlackRunsTheWorkOnSpot) {
  const Scenario s = Deferrable(Seconds(3600));
  const RunResult held = RunAs(s, "gpuscaler-held");
  EXPECT_EQ(held.jobs_completed, 4);
  EXPECT_EQ(held.deadlines_by_class.at("training").met, 4);
  EXPECT_EQ(held.cost_by_capacity_type.at("on-demand"), 0) << "held for spot, never on-demand";
  EXPECT_GT(held.cost_by_capacity_type.at("spot"), 0);
  // Run at once, the same work goes to on-demand while spot is down.
  const RunResult at_once = RunAs(s, "gpuscaler-reactive");
  EXPECT_GT(at_once.cost_by_capacity_type.at("on-demand"), 0);
  EXPECT_EQ(at_once.deadlines_by_class.at("training").met, 4);
  EXPECT_LT(held.total_cost_usd, at_once.total_cost_usd);
}

TEST(DeadlineReplay, TheLoopReplansAtTheSwitchTimeAndCountsMissedDeadlinesOnce) {
  // Spot never comes back. The held jobs' plan asks for nothing, so only the
  // switch time makes the loop plan again; the on-demand launch follows.
  const Scenario s = Deferrable(Seconds(48 * 3600));
  Result<RunSpec> spec = MakeRunSpec("gpuscaler-held", s, nullptr);
  ASSERT_TRUE(spec.ok());
  Replay replay(s, *spec);
  TickReport tick;
  bool held_seen = false, switched = false;
  int missed = 0;
  while (!replay.done()) {
    if (!replay.Step(&tick)) continue;
    for (const auto& [cls, n] : tick.deadlines_missed) missed += n;
    if (tick.planned && tick.plan.replan_by) held_seen = true;
    if (tick.gate_reason == "plan: a unit held for its deadline may go to on-demand") {
      switched = true;
      EXPECT_TRUE(held_seen);
      // Within one tick of the switch time the planner gives the held work
      // on-demand capacity.
      bool on_demand = false;
      for (const LaunchAction& l : tick.plan.launches)
        on_demand = on_demand || (l.count > 0 && l.offering.capacity_type == CapacityType::kOnDemand);
      EXPECT_TRUE(on_demand) << tick.plan.summary;
    }
  }
  EXPECT_TRUE(switched);
  EXPECT_EQ(missed, 0);

  // A deadline shorter than the work: never held, still running when it
  // passes, counted once per job.
  Scenario late = Deferrable(Seconds(48 * 3600));
  late.policy.classes[0].deadline = DeadlineRule{Seconds(3600), 0};
  late.policy.content_hash = PolicyContentHash(late.policy);
  Result<RunSpec> late_spec = MakeRunSpec("gpuscaler", late, nullptr);
  ASSERT_TRUE(late_spec.ok());
  Replay late_replay(late, *late_spec);
  int late_missed = 0;
  while (!late_replay.done()) {
    if (late_replay.Step(&tick)) late_missed += tick.deadlines_missed["training"];
  }
  EXPECT_EQ(late_missed, 4);
  const RunResult r = late_replay.Finish();
  EXPECT_EQ(r.deadlines_by_class.at("training").unmeetable, 4);
  EXPECT_EQ(r.deadlines_by_class.at("training").missed, 0);
}

TEST(DeadlineReplay, ReactiveAndTheBaselinesRunWithoutDeadlines) {
  const Scenario s = Deferrable(Seconds(3600));
  EXPECT_TRUE(PlansAhead(s.policy));
  for (const char* name : {"gpuscaler-reactive", "karpenter", "greedy"}) {
    Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(spec.ok());
    EXPECT_FALSE(spec->policy.classes[0].deadline.has_value()) << name;
  }
  for (const char* name : {"gpuscaler", "gpuscaler-held"}) {
    Result<RunSpec> gpuscaler = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(gpuscaler.ok());
    EXPECT_EQ(gpuscaler->policy.classes[0].deadline, (DeadlineRule{kDeadline, 0})) << name;
  }
}

}  // namespace
}  // namespace gpuscaler::sim
