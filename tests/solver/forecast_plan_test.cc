// Capacity launched ahead of a demand forecast (solver/forecast_demand.h):
// forecast units take free room first, open new nodes when the cost rule
// says so, never cause a removal, explain themselves, and travel in the
// snapshot's JSON so a decision replays.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/forecast_demand.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::Unit;

// A forecast of class `cls`: demand `now` GPUs, its peak within two minutes
// `now` up to the median and `now + k` at q0.5 + k/10 (k = 1..4).
DemandForecast Rising(const std::string& cls, double now) {
  DemandForecast f;
  f.workload_class = cls;
  f.demand_gpus = now;
  f.horizon = Seconds(120);
  f.lead_time = Seconds(120);
  f.levels = {{0.1, now},     {0.2, now},     {0.3, now},     {0.4, now},      {0.5, now},     {0.6, now + 1},
              {0.7, now + 2}, {0.8, now + 3}, {0.9, now + 4}, {0.95, now + 5}, {0.99, now + 8}};
  return f;
}

Policy ForecastPolicyWith(double wait_cost) {
  Policy p = BasePolicy();
  p.classes[0].forecast = ForecastPolicy{};
  p.classes[0].wait_cost_usd_per_hour = wait_cost;
  return p;
}

std::set<std::string> Removed(const Plan& p) {
  std::set<std::string> out;
  for (const auto& t : p.terminations) out.insert(t.instance_id);
  return out;
}

using testing::HasNote;

TEST(ForecastPlan, ForecastUnitsTakeIdleNodesFirstAndKeepThem) {
  // Three idle L4 nodes, two hours old: without a forecast all three go.
  Snapshot s = BaseSnapshot();
  for (const char* id : {"a", "b", "c"})
    s.nodes.push_back(MakeNode(s, id, "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
  Policy p = ForecastPolicyWith(100);
  const Plan reactive = MakePlan(s, p);
  EXPECT_EQ(reactive.terminations.size(), 3u);
  // Demand may reach 2 GPUs within the lead time (q0.7): two nodes stay, and
  // nothing new is bought while idle room holds the forecast.
  p.classes[0].forecast->quantile = 0.7;
  s.forecasts = {Rising("inference", 0)};
  const Plan ahead = MakePlan(s, p);
  EXPECT_EQ(ahead.terminations.size(), 1u);
  EXPECT_EQ(LaunchedNodes(ahead), 0);
  EXPECT_TRUE(ahead.placements.empty());
  EXPECT_TRUE(HasNote(ahead, "class inference: forecast q0.70")) << ahead.summary;
}

TEST(ForecastPlan, NeverRemovesANodeThePlanWithoutItKeeps) {
  // Scenes with removals to make (idle nodes, a node worth replacing,
  // partly used nodes, pending work) and forecasts from none to large: the
  // forecast only ever takes removals away.
  std::vector<Snapshot> scenes;
  {
    Snapshot s = BaseSnapshot();
    for (const char* id : {"a", "b", "c", "d"})
      s.nodes.push_back(MakeNode(s, id, "g5.xlarge", "us-east-1b", CapacityType::kSpot));
    scenes.push_back(s);
  }
  {
    Snapshot s = BaseSnapshot();
    DemandUnit u = Unit("w", 1);
    u.interruptible = false;
    s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
    s.nodes.push_back(MakeNode(s, "idle", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand));
    scenes.push_back(s);
  }
  {
    Snapshot s = BaseSnapshot();
    s.nodes.push_back(
        MakeNode(s, "x", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("r1", 1)}));
    s.nodes.push_back(
        MakeNode(s, "y", "g6.12xlarge", "us-east-1b", CapacityType::kOnDemand, {Unit("r2", 1)}));
    s.nodes.push_back(MakeNode(s, "z", "g6.xlarge", "us-east-1b", CapacityType::kOnDemand));
    s.pending = {Unit("p1", 1), Unit("p2", 2)};
    scenes.push_back(s);
  }
  for (size_t i = 0; i < scenes.size(); ++i) {
    for (double wait : {0.0, 1.0, 100.0}) {
      for (double now : {0.0, 2.0, 10.0}) {
        SCOPED_TRACE("scene " + std::to_string(i) + " wait " + std::to_string(wait) + " demand " +
                     std::to_string(now));
        Snapshot s = scenes[i];
        const Policy p = ForecastPolicyWith(wait);
        const std::set<std::string> without = Removed(MakePlan(s, p));
        s.forecasts = {Rising("inference", now)};
        const Plan with = MakePlan(s, p);
        for (const std::string& id : Removed(with))
          EXPECT_TRUE(without.count(id)) << id << " removed only with the forecast";
      }
    }
  }
}

TEST(ForecastPlan, LaunchesAheadWithTheReasonAndNoForecastUnitInThePlan) {
  Snapshot s = BaseSnapshot();
  s.pending = {Unit("real", 1, 4000, 16384)};
  s.forecasts = {Rising("inference", 1)};
  const Plan plan = MakePlan(s, ForecastPolicyWith(100));
  // Four GPUs ahead (up to the q0.9 forecast of 5) and the pending unit.
  int gpus = 0;
  bool said = false;
  for (const auto& l : plan.launches) {
    for (const auto& pt : testing::Catalog())
      if (pt.type.name == l.offering.instance_type) gpus += l.count * pt.type.gpu_count;
    said = said || l.reason.find("ahead of class inference's demand forecast") != std::string::npos;
    for (const auto& id : l.unit_ids) EXPECT_EQ(id.rfind(kForecastUnitPrefix, 0), std::string::npos) << id;
  }
  EXPECT_EQ(gpus, 5);
  EXPECT_TRUE(said);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].unit_id, "real");
  EXPECT_TRUE(plan.unplaced.empty());
  EXPECT_TRUE(HasNote(plan, "4 units of 1.00 GPUs launched ahead")) << plan.summary;
}

TEST(ForecastPlan, CheapWaitLaunchesNothingAhead) {
  Snapshot s = BaseSnapshot();
  s.forecasts = {Rising("inference", 0)};
  const Plan plan = MakePlan(s, ForecastPolicyWith(0));
  EXPECT_EQ(LaunchedNodes(plan), 0);
  EXPECT_TRUE(HasNote(plan, "0 units")) << plan.summary;
}

TEST(ForecastPlan, AFallbackIsANoteAndThePlanIsTheReactiveOne) {
  Snapshot s = BaseSnapshot();
  s.pending = {Unit("real", 1, 4000, 16384)};
  const Policy p = ForecastPolicyWith(100);
  const Plan reactive = MakePlan(s, p);
  DemandForecast f;
  f.workload_class = "inference";
  f.fallback = "12 demand changes in the history, the forecast needs 60";
  s.forecasts = {f};
  Plan plan = MakePlan(s, p);
  EXPECT_TRUE(HasNote(plan,
                      "class inference: forecast off (12 demand changes in the history, the forecast needs "
                      "60): planned reactively"));
  EXPECT_NE(plan.summary.find("planned reactively"), std::string::npos);
  // Besides the note (which the summary repeats), the reactive plan.
  ASSERT_EQ(plan.notes.size(), reactive.notes.size() + 1);
  plan.notes.pop_back();
  plan.summary = SummarizePlan(plan, s.pending.size());
  EXPECT_EQ(FormatPlanJsonLine(plan), FormatPlanJsonLine(reactive));
}

TEST(ForecastPlan, ForecastsRoundTripThroughTheSnapshotJson) {
  Snapshot s = BaseSnapshot();
  s.forecasts = {Rising("inference", 2)};
  DemandForecast off;
  off.workload_class = "training";
  off.fallback = "no demand history yet";
  s.forecasts.push_back(off);
  Result<Snapshot> back = ParseSnapshotJson(FormatSnapshotJsonLine(s), "s.json");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  ASSERT_EQ(back->forecasts.size(), 2u);
  EXPECT_EQ(back->forecasts[0].workload_class, "inference");
  EXPECT_EQ(back->forecasts[0].horizon, Seconds(120));
  EXPECT_EQ(back->forecasts[0].lead_time, Seconds(120));
  EXPECT_EQ(back->forecasts[0].demand_gpus, 2);
  ASSERT_EQ(back->forecasts[0].levels.size(), 11u);
  EXPECT_EQ(back->forecasts[0].levels[8].quantile, 0.9);
  EXPECT_EQ(back->forecasts[0].levels[8].gpus, 6);
  EXPECT_EQ(back->forecasts[1].fallback, "no demand history yet");
  // The same plan from the snapshot and from its JSON: explain replays it.
  const Policy p = ForecastPolicyWith(100);
  EXPECT_EQ(FormatPlanJsonLine(MakePlan(*back, p)), FormatPlanJsonLine(MakePlan(s, p)));
}

}  // namespace
}  // namespace gpuscaler
