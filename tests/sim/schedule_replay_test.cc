// scaling.schedules through the controller: a schedule's floor appears at its
// cron time in its own time zone and goes when it ends, with the plan saying
// why, in a replay of the demo day (the same loop the daemon runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {
namespace {

int PoolNodes(const Snapshot& s, const std::string& pool) {
  return static_cast<int>(std::count_if(s.nodes.begin(), s.nodes.end(), [&](const Node& n) {
    return n.pool == pool && n.state != NodeState::kTerminating;
  }));
}

bool Mentions(const Plan& plan, const std::string& text) {
  return std::any_of(plan.notes.begin(), plan.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST(Schedules, TheFloorAppearsAndGoesAtTheCronTimesInThePolicysTimeZone) {
  Result<Scenario> s = MakeBuiltinScenario("demo", 7, 1, BuiltinCatalog());
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_EQ(FormatRfc3339(s->start), "2026-07-06T00:00:00Z");
  constexpr int kFloor = 40;
  ScalingSchedule warm;
  warm.name = "morning-warm";
  // 21:00 in New York is 01:00 UTC in July (EDT), while the demo's load
  // needs about 10 nodes.
  warm.cron = "0 21 * * *";
  warm.timezone = "America/New_York";
  warm.duration = Seconds(3600);
  warm.pools = {"inference"};
  warm.min_nodes = kFloor;
  s->policy.scaling.schedules = {warm};
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", *s, nullptr);
  ASSERT_TRUE(spec.ok()) << spec.error().ToString();
  Replay replay(*s, *spec);

  const WallTime opens = s->start + Seconds(1 * 3600);
  const WallTime closes = s->start + Seconds(2 * 3600);
  int most_before = 0;
  int fewest_within = 1 << 30;  // after the opening tick
  int fewest_after = 1 << 30;
  bool planned_at_opening = false;
  int removed_after_closing = 0;
  TickReport tick;
  while (!replay.done() && replay.now() < closes + Seconds(2 * 3600)) {
    if (!replay.Step(&tick)) continue;
    const int nodes = PoolNodes(replay.controller().snapshot(), "inference");
    if (tick.time < opens) {
      most_before = std::max(most_before, nodes);
      if (tick.planned) {
        EXPECT_FALSE(Mentions(tick.plan, "morning-warm")) << FormatRfc3339(tick.time);
      }
    } else if (tick.time < closes) {
      if (tick.time == opens) {
        // The schedule starting is a change: the controller plans at once.
        planned_at_opening = tick.planned;
        EXPECT_TRUE(Mentions(tick.plan, "pool inference: schedule morning-warm in force, min_nodes 40"));
      }
      fewest_within = std::min(fewest_within, nodes);
    } else {
      if (tick.planned) {
        EXPECT_FALSE(Mentions(tick.plan, "morning-warm")) << FormatRfc3339(tick.time);
        for (const TerminationAction& t : tick.plan.terminations) removed_after_closing += t.pool == "inference";
      }
      fewest_after = std::min(fewest_after, nodes);
    }
  }
  EXPECT_LT(most_before, kFloor);
  EXPECT_TRUE(planned_at_opening);
  EXPECT_GE(fewest_within, kFloor) << "the floor holds for the whole window";
  // Once it ends, the idle nodes it kept go at the pace of the disruption budget
  // (disruption.max_disrupted_per_interval per disruption_interval).
  EXPECT_GT(removed_after_closing, 0);
  EXPECT_LT(fewest_after, kFloor) << "the floor should be gone within two hours of the schedule's end";
}

// `gpuscaler sim --compare` adds the same policy without its schedules: the
// floor's hour of 40 nodes is what tells the two runs apart. Whole-day totals
// also carry the two trajectories' other differences (a day of the demo moves
// by more than the floor's cost between two runs that differ in anything), so
// the hour itself is compared.
TEST(Schedules, TheReactiveRunIsThePolicyWithoutItsSchedules) {
  Result<Scenario> s = MakeBuiltinScenario("demo", 7, 1, BuiltinCatalog());
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ScalingSchedule warm;
  warm.name = "warm";
  warm.cron = "0 1 * * *";
  warm.duration = Seconds(3600);
  warm.pools = {"inference"};
  warm.min_nodes = 40;
  s->policy.scaling.schedules = {warm};
  s->policy.content_hash = PolicyContentHash(s->policy);
  ASSERT_TRUE(PlansAhead(s->policy));
  Result<RunSpec> reactive = MakeRunSpec("gpuscaler-reactive", *s, nullptr);
  ASSERT_TRUE(reactive.ok());
  EXPECT_TRUE(reactive->policy.scaling.schedules.empty());
  EXPECT_NE(reactive->policy.content_hash, s->policy.content_hash);
  RunOptions with_series;
  with_series.timeseries = true;
  Result<std::vector<RunResult>> runs = RunMany(*s, {"gpuscaler", "gpuscaler-reactive"}, with_series);
  ASSERT_TRUE(runs.ok()) << runs.error().ToString();
  ASSERT_EQ(runs->size(), 3u);  // on-demand first
  EXPECT_EQ((*runs)[1].name, "gpuscaler");
  EXPECT_EQ((*runs)[2].name, "gpuscaler-reactive");
  const WallTime opens = s->start + Seconds(3600);
  const WallTime closes = opens + Seconds(3600);
  struct Hour {
    double usd = 0;
    int fewest_nodes = 1 << 30;
  };
  auto floor_hour = [&](const RunResult& r) {
    Hour h;
    for (size_t i = 0; i + 1 < r.timeseries.size(); ++i) {
      const TimePoint& p = r.timeseries[i];
      if (p.time < opens || p.time >= closes) continue;
      h.usd += p.usd_per_hour * static_cast<double>((r.timeseries[i + 1].time - p.time).count()) / 3600.0;
      // The schedule's first tick launches the floor; count from the next.
      if (p.time > opens) h.fewest_nodes = std::min(h.fewest_nodes, p.nodes);
    }
    return h;
  };
  const Hour with_floor = floor_hour((*runs)[1]);
  const Hour without = floor_hour((*runs)[2]);
  EXPECT_GE(with_floor.fewest_nodes, 40);
  EXPECT_LT(without.fewest_nodes, 40);
  EXPECT_GT(with_floor.usd, without.usd + 5.0) << "the floor's nodes are paid in the scheduled run only";
}

}  // namespace
}  // namespace gpuscaler::sim
