// The offline deadline bound of sim/deadline_bound.h on a hand-made market
// and job list: the cheapest-price timeline (spot while up and for the
// notice after a drop, on-demand otherwise, price steps), the cheapest run
// in a window, and the per-job totals over a scenario built the way a
// replay builds it, with the simulator's own deadline classification; then
// the labels of a split replay and the bound set against an at-once run.
#include "sim/deadline_bound.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/loader.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {
namespace {

constexpr double kEps = 1e-6;

// On-demand: 1 GPU at $3/h. Spot: 4 GPUs at $2/h, $0.50 per GPU-hour, with
// capacity from 0, none from 1 h, back at 2 h.
OfferingSteps OnDemand() {
  OfferingSteps o;
  o.offering.instance_type = "od1";
  o.offering.capacity_type = CapacityType::kOnDemand;
  o.gpus_per_node = 1;
  o.usd_per_hour = {{Seconds(0), 3.0}};
  return o;
}

OfferingSteps Spot() {
  OfferingSteps o;
  o.offering.instance_type = "spot4";
  o.offering.capacity_type = CapacityType::kSpot;
  o.gpus_per_node = 4;
  o.usd_per_hour = {{Seconds(0), 2.0}};
  o.available_nodes = {{Seconds(0), 1}, {Seconds(3600), 0}, {Seconds(7200), 5}};
  return o;
}

TEST(DeadlineBound, SpotWhileUpAndForTheNoticeAfterADropOnDemandOtherwise) {
  const OfferingSteps od = OnDemand(), spot = Spot();
  Result<PriceTimeline> t = CheapestPerGpu({&od, &spot}, Seconds(120));
  ASSERT_TRUE(t.ok()) << t.error().message();
  // Spot usable [0, 3600 + 120) and from 7200; on-demand in between.
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].start, Seconds(0));
  EXPECT_NEAR((*t)[0].usd_per_gpu_hour, 0.5, kEps);
  EXPECT_TRUE((*t)[0].spot);
  EXPECT_EQ((*t)[1].start, Seconds(3720));
  EXPECT_NEAR((*t)[1].usd_per_gpu_hour, 3.0, kEps);
  EXPECT_FALSE((*t)[1].spot);
  EXPECT_EQ((*t)[2].start, Seconds(7200));
  EXPECT_TRUE((*t)[2].spot);
}

TEST(DeadlineBound, CheapestRunTakesTheCheapestSecondsOfItsWindow) {
  const OfferingSteps od = OnDemand(), spot = Spot();
  const PriceTimeline t = *CheapestPerGpu({&od, &spot}, Seconds(120));
  // 2 h in [0, 4 h): spot is usable 3720 + 7200 s, so all of it on spot:
  // 2 h x $0.50 = $1.00 per GPU.
  Result<RunCost> deferred = CheapestRun(t, Seconds(0), Seconds(14400), Seconds(7200));
  ASSERT_TRUE(deferred.ok());
  EXPECT_NEAR(deferred->usd_per_gpu, 1.0, kEps);
  EXPECT_EQ(deferred->spot, Seconds(7200));
  // The same 2 h at once, [0, 2 h): 3720 s spot + 3480 s on-demand:
  // (3720 x 0.5 + 3480 x 3) / 3600 = (1860 + 10440) / 3600 = $3.416667.
  Result<RunCost> at_once = CheapestRun(t, Seconds(0), Seconds(7200), Seconds(7200));
  ASSERT_TRUE(at_once.ok());
  EXPECT_NEAR(at_once->usd_per_gpu, 12300.0 / 3600.0, kEps);
  EXPECT_EQ(at_once->spot, Seconds(3720));
  // 5000 s in [3000, 9000): spot 720 s (to 3720) + 1800 s (from 7200), the
  // other 2480 s on-demand: (2520 x 0.5 + 2480 x 3) / 3600 = 8700 / 3600.
  Result<RunCost> partial = CheapestRun(t, Seconds(3000), Seconds(9000), Seconds(5000));
  ASSERT_TRUE(partial.ok());
  EXPECT_NEAR(partial->usd_per_gpu, 8700.0 / 3600.0, kEps);
  EXPECT_EQ(partial->spot, Seconds(2520));
  // Nothing to run costs nothing; a run longer than its window is refused.
  EXPECT_NEAR(CheapestRun(t, Seconds(0), Seconds(10), Seconds(0))->usd_per_gpu, 0.0, kEps);
  Result<RunCost> too_long = CheapestRun(t, Seconds(0), Seconds(3600), Seconds(3601));
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message().find("does not fit"), std::string::npos) << too_long.error().message();
}

TEST(DeadlineBound, PriceStepsAndDropsShorterThanTheNotice) {
  const OfferingSteps od = OnDemand();
  // Spot at $16/h ($4 per GPU-hour, dearer than on-demand) from 2 h: the
  // timeline keeps on-demand from the drop on.
  OfferingSteps dear = Spot();
  dear.usd_per_hour.emplace_back(Seconds(7200), 16.0);
  const PriceTimeline t = *CheapestPerGpu({&od, &dear}, Seconds(120));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].start, Seconds(3720));
  EXPECT_FALSE(t[1].spot);
  // Down for 60 s, less than the notice: running nodes never stop.
  OfferingSteps flapping = Spot();
  flapping.available_nodes = {{Seconds(0), 1}, {Seconds(1000), 0}, {Seconds(1060), 1}};
  const PriceTimeline f = *CheapestPerGpu({&od, &flapping}, Seconds(120));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].spot);
  // Spot alone, down for a while: no price then.
  Result<PriceTimeline> none = CheapestPerGpu({&flapping}, Seconds(0));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("no offering usable at +1000 s"), std::string::npos)
      << none.error().message();
}

// One 4-GPU type (gx: $12/h on-demand, $2/h spot: $3 and $0.50 per GPU-hour)
// and one 1-GPU type (g1: $3.50 and $0.45) whose spot is never up in the
// pool's zone; the 1-GPU type's zone b is outside the pool.
constexpr const char* kCatalog = R"(apiVersion: gpuscaler/v1
kind: Catalog
provider: aws
source: "test numbers"
as_of: "2026-07-20"
defaults: {spot_discount: 0.5, spot_interruptions_per_hour: 0.0, launch_latency: 3m}
gpu_models:
  - {name: Test-GPU, short_name: tgpu, memory_mib: 16384}
instance_types:
  - {name: gx.4, family: gx, gpu_model: Test-GPU, gpu_count: 4, vcpus: 32, memory_mib: 131072}
  - {name: gx.1, family: gx, gpu_model: Test-GPU, gpu_count: 1, vcpus: 8, memory_mib: 32768}
regions:
  - region: us-east-1
    zones: [us-east-1a, us-east-1b]
    on_demand_usd_per_hour: {gx.4: 12.0, gx.1: 3.5}
    spot_usd_per_hour: {gx.4: 2.0, gx.1: 0.45}
)";

constexpr const char* kPolicy = R"(apiVersion: gpuscaler/v1
kind: Policy
name: bound-test
pools:
  - name: gpu
    families: [gx]
    zones: [us-east-1a]
    capacity_types: [on-demand, spot]
classes:
  - {name: batch, pools: [gpu], interruptible: true, deadline: 4h}
  - {name: strict, pools: [gpu], interruptible: false, deadline: 4h}
  - {name: eval, pools: [gpu], interruptible: true}
)";

TraceJob Job(const std::string& id, const std::string& cls, int gpus, int64_t submit_s,
                  int64_t duration_s) {
  TraceJob j;
  j.submit = Seconds(submit_s);
  j.duration = Seconds(duration_s);
  j.unit.id = id;
  j.unit.workload_class = cls;
  j.unit.gpus = gpus;
  j.unit.cpu_milli = 1000;
  j.unit.memory_mib = 1024;
  return j;
}

Scenario HandMade() {
  Result<Catalog> catalog = ParseCatalog(kCatalog, "bound.yaml");
  EXPECT_TRUE(catalog.ok()) << catalog.error().message();
  PolicyLoadResult policy = ParsePolicy(kPolicy, "bound-policy.yaml", &*catalog);
  EXPECT_TRUE(policy.ok()) << (policy.problems.empty() ? "" : policy.problems.front().ToString());
  Trace trace;
  trace.jobs = {
      Job("fits", "batch", 2, 0, 7200),       // meetable: 2 h of a 4 h window
      Job("strict", "strict", 1, 0, 3600),    // meetable, never on spot
      Job("too-long", "batch", 1, 0, 18000),  // 5 h: unmeetable
      Job("eval", "eval", 1, 3600, 3600),     // no deadline: at once
      Job("late", "batch", 1, 82800, 11600),  // due 10800 s after the 1-day horizon
  };
  TraceJob cpu = Job("cpu", "eval", 0, 0, 600);
  trace.jobs.push_back(cpu);
  trace.span = Seconds(82800);
  SpotMarket market;
  market.availability = {{Seconds(0), "gx.4", "us-east-1a", 1},
                         {Seconds(0), "gx.1", "us-east-1a", 0},
                         {Seconds(3600), "gx.4", "us-east-1a", 0},
                         {Seconds(7200), "gx.4", "us-east-1a", 5}};
  Scenario s = MakeTraceScenario(trace, market, *catalog, policy.policy, 1, 1);
  s.cloud.hazard_by_family.clear();
  return s;
}

TEST(DeadlineBound, PerJobTotalsOverAHandMadeScenario) {
  const Scenario s = HandMade();
  ASSERT_EQ(s.horizon, Seconds(86400));
  ASSERT_EQ(s.cloud.notice, Seconds(120));
  Result<DeadlineBound> b = BoundDeadlines(s);
  ASSERT_TRUE(b.ok()) << b.error().message();
  // gx.4 at $0.50 per spot GPU-hour in zone a, [0, 3720) and from 7200;
  // on-demand $3 per GPU-hour (gx.1's $3.50 is dearer, its spot is never up
  // in zone a, and zone b is not the pool's).
  //  fits:   2 GPUs x 2 h on spot = $2.00; at once 2 x 12300/3600 = $6.833333;
  //          on-demand 2 x 2 h x $3 = $12.
  //  strict: 1 GPU x 1 h on-demand = $3 in every column.
  //  late:   due 97200 s, 10800 s after the horizon: 800 s of its 11600 s
  //          must run by it, all on spot: 800/3600 x $0.50 = $0.111111
  //          (bound and at once), on-demand 800/3600 x $3 = $0.666667.
  EXPECT_EQ(b->meetable.jobs, 3);
  EXPECT_NEAR(b->meetable.gpu_hours, 4.0 + 1.0 + 800.0 / 3600.0, kEps);
  EXPECT_NEAR(b->meetable.deferred_usd, 2.0 + 3.0 + 400.0 / 3600.0, kEps);
  EXPECT_NEAR(b->meetable.deferred_spot_gpu_hours, 4.0 + 800.0 / 3600.0, kEps);
  EXPECT_NEAR(b->meetable.at_once_usd, 2.0 * 12300.0 / 3600.0 + 3.0 + 400.0 / 3600.0, kEps);
  EXPECT_NEAR(b->meetable.at_once_spot_gpu_hours, 2.0 * 3720.0 / 3600.0 + 800.0 / 3600.0, kEps);
  EXPECT_NEAR(b->meetable.on_demand_usd, 12.0 + 3.0 + 2400.0 / 3600.0, kEps);
  // too-long, at once in both: [0, 5 h) has 3720 + 10800 s of spot and
  // 3480 s of on-demand: (14520 x 0.5 + 3480 x 3) / 3600 = 17700 / 3600.
  EXPECT_EQ(b->unmeetable.jobs, 1);
  EXPECT_NEAR(b->unmeetable.gpu_hours, 5.0, kEps);
  EXPECT_NEAR(b->unmeetable.deferred_usd, 17700.0 / 3600.0, kEps);
  EXPECT_NEAR(b->unmeetable.at_once_usd, 17700.0 / 3600.0, kEps);
  EXPECT_NEAR(b->unmeetable.on_demand_usd, 15.0, kEps);
  // eval, [3600, 7200): 120 s of spot (the notice), 3480 s on-demand:
  // (120 x 0.5 + 3480 x 3) / 3600 = 10500 / 3600.
  EXPECT_EQ(b->no_deadline.jobs, 1);
  EXPECT_NEAR(b->no_deadline.at_once_usd, 10500.0 / 3600.0, kEps);
  EXPECT_NEAR(b->no_deadline.deferred_usd, 10500.0 / 3600.0, kEps);
  EXPECT_EQ(b->jobs_without_gpu, 1);
  EXPECT_NEAR(b->AtOnceUsd() - b->DeferredUsd(), 2.0 * 12300.0 / 3600.0 - 2.0, kEps);
}

TEST(DeadlineBound, ClassifiesJobsAsTheReplayJudgesThem) {
  const Scenario s = HandMade();
  Result<DeadlineBound> b = BoundDeadlines(s);
  ASSERT_TRUE(b.ok()) << b.error().message();
  Result<RunSpec> spec = MakeRunSpec("on-demand", s, nullptr);
  ASSERT_TRUE(spec.ok());
  const RunResult r = RunScenario(s, *spec);
  int64_t judged = 0, unmeetable = 0;
  for (const auto& [cls, d] : r.deadlines_by_class) {
    judged += d.met + d.missed + d.open;
    unmeetable += d.unmeetable;
  }
  EXPECT_EQ(judged, b->meetable.jobs);
  EXPECT_EQ(unmeetable, b->unmeetable.jobs);
  EXPECT_EQ(r.deadlines_by_class.count("eval"), 0u);
}

TEST(DeadlineBound, AJobThatMayUseNoOnDemandOfferingIsNamed) {
  Scenario s = HandMade();
  s.trace.jobs.front().unit.capacity_type = CapacityType::kSpot;  // pinned to spot, which goes down
  Result<DeadlineBound> b = BoundDeadlines(s);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("job fits (class batch)"), std::string::npos) << b.error().message();
}

TEST(DeadlineBound, ALabelledScenarioNamesEachJobsDeadlineAsItsTeam) {
  const Scenario labelled = LabelJobsByDeadline(HandMade());
  std::map<std::string, std::string> team;
  for (const TraceJob& j : labelled.trace.jobs) team[j.unit.id] = j.unit.team;
  EXPECT_EQ(team.at("fits"), kMeetableTeam);
  EXPECT_EQ(team.at("strict"), kMeetableTeam);
  EXPECT_EQ(team.at("late"), kMeetableTeam);
  EXPECT_EQ(team.at("too-long"), kUnmeetableTeam);
  EXPECT_EQ(team.at("eval"), kNoDeadlineTeam);
  EXPECT_EQ(team.at("cpu"), kNoDeadlineTeam);
}

// An at-once run of $40: 30 GPU-h paid, 24 busy, 1 lost.
RunResult AtOnce(double total_usd) {
  RunResult r;
  r.name = "at-once";
  r.total_cost_usd = total_usd;
  r.paid_gpu_hours = 30;
  r.busy_gpu_hours = 24;
  r.gpu_hours_lost = 1;
  return r;
}

TEST(DeadlineBound, TheBoundAgainstAnAtOnceRunTakesTheMostGenerousSplit) {
  const DeadlineBound b = *BoundDeadlines(HandMade());
  // The meetable work: bound 5 + 400/3600, on-demand 15 + 2400/3600.
  const double bound = 5.0 + 400.0 / 3600.0, on_demand = 15.0 + 2400.0 / 3600.0;
  const BoundComparison c = CompareWithBound(b, AtOnce(40), MeasuredShares{9, 4, 40.5});
  EXPECT_EQ(c.at_once_run, "at-once");
  EXPECT_NEAR(c.at_once_usd, 40, kEps);
  ASSERT_TRUE(c.labelled_at_once_usd.has_value());
  EXPECT_NEAR(*c.labelled_at_once_usd, 40.5, kEps);
  ASSERT_EQ(c.splits.size(), 3u);
  EXPECT_EQ(c.splits[0].name, "on-demand");
  EXPECT_NEAR(c.splits[0].meetable_usd, on_demand, kEps);
  EXPECT_NEAR(c.splits[0].saving_usd, on_demand - bound, kEps);
  EXPECT_NEAR(c.splits[0].best_deferred_usd, 40 - (on_demand - bound), kEps);
  EXPECT_NEAR(c.splits[0].saving_pct, 100 * (on_demand - bound) / 40, kEps);
  EXPECT_EQ(c.splits[1].name, "measured");
  EXPECT_NEAR(c.splits[1].saving_usd, 9 - bound, kEps);
  EXPECT_EQ(c.splits[2].name, "measured-with-idle");
  EXPECT_NEAR(c.splits[2].saving_usd, 13 - bound, kEps);
  EXPECT_EQ(c.most_generous, 0u);
  EXPECT_EQ(&c.Best(), &c.splits[0]);
  // A run that saves half of that against the at-once run has half the
  // share; one dearer than the at-once run, a negative share.
  RunResult half = AtOnce(40 - (on_demand - bound) / 2);
  EXPECT_NEAR(c.SavingUsd(half), (on_demand - bound) / 2, kEps);
  ASSERT_TRUE(c.ShareOfBoundPct(half).has_value());
  EXPECT_NEAR(*c.ShareOfBoundPct(half), 50.0, kEps);
  EXPECT_NEAR(*c.ShareOfBoundPct(AtOnce(41)), -100.0 / (on_demand - bound), kEps);
}

TEST(DeadlineBound, WithoutAMeasuredSplitIdleAndLostGpuHoursCountAtOnDemand) {
  const DeadlineBound b = *BoundDeadlines(HandMade());
  const double bound = 5.0 + 400.0 / 3600.0, on_demand = 15.0 + 2400.0 / 3600.0;
  const BoundComparison c = CompareWithBound(b, AtOnce(40), std::nullopt);
  EXPECT_FALSE(c.labelled_at_once_usd.has_value());
  ASSERT_EQ(c.splits.size(), 2u);
  // The meetable work's mean on-demand price is $3 per GPU-hour; 30 - 24 + 1
  // idle and lost GPU-hours add $21.
  EXPECT_EQ(c.splits[1].name, "on-demand-with-idle");
  EXPECT_NEAR(c.splits[1].meetable_usd, on_demand + 21, kEps);
  EXPECT_NEAR(c.splits[1].saving_usd, on_demand + 21 - bound, kEps);
  EXPECT_EQ(c.most_generous, 1u);
}

TEST(DeadlineBound, AShareIsCappedAtTheBillAndNoSavingGivesNoShare) {
  const DeadlineBound b = *BoundDeadlines(HandMade());
  const double bound = 5.0 + 400.0 / 3600.0;
  // The measured share exceeds a $12 bill: the meetable work cost at most
  // the bill.
  const BoundComparison capped = CompareWithBound(b, AtOnce(12), MeasuredShares{50, 0, 12});
  EXPECT_NEAR(capped.splits[1].meetable_usd, 50, kEps);
  EXPECT_NEAR(capped.splits[1].saving_usd, 12 - bound, kEps);
  EXPECT_NEAR(capped.splits[1].best_deferred_usd, bound, kEps);
  // A bill below the bound: no split saves anything, no share is defined.
  const BoundComparison none = CompareWithBound(b, AtOnce(5), MeasuredShares{5, 0, 5});
  EXPECT_LT(none.Best().saving_usd, 0);
  EXPECT_FALSE(none.ShareOfBoundPct(AtOnce(4)).has_value());
}

}  // namespace
}  // namespace gpuscaler::sim
