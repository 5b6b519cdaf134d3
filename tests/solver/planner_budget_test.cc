// The planner under budgets: hard and soft caps, monthly caps as hourly
// allowances, and caps per pool and per team.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "solver/planner_test_support.h"

namespace gpuscaler::planner_budget_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::ReasonCounts;
using testing::Unit;
using testing::Units;

TEST(Planner, KeepsHighPriorityDemandUnderAHardBudget) {
  Snapshot s = BaseSnapshot();
  DemandUnit hi = OnDemandOnly(Unit("", 1));
  hi.priority = 10;
  DemandUnit lo = OnDemandOnly(Unit("", 1));
  lo.priority = 1;
  for (auto& u : Units("lo", 3, lo)) s.pending.push_back(u);
  for (auto& u : Units("hi", 2, hi)) s.pending.push_back(u);
  Policy p = BasePolicy();
  p.budget.global.hourly_usd = 2.0;  // two g6.xlarge at $0.805
  const Plan plan = MakePlan(s, p);
  EXPECT_LE(plan.cost_after_usd_per_hour, 2.0 + 1e-9);
  std::set<std::string> placed;
  for (const auto& pl : plan.placements) placed.insert(pl.unit_id);
  EXPECT_TRUE(placed.count("hi0") && placed.count("hi1"));
  ASSERT_EQ(plan.unplaced.size(), 3u);
  for (const auto& u : plan.unplaced) {
    EXPECT_EQ(u.unit_id.substr(0, 2), "lo");
    EXPECT_EQ(u.reason, UnplacedReason::kBudget);
  }
  ExpectValid(s, p, plan);
}

TEST(Planner, PlansPastASoftBudgetWithANote) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 3, OnDemandOnly(Unit("", 1)));
  Policy p = BasePolicy();
  p.budget.global.hourly_usd = 1.0;
  p.budget.global.hard = false;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty());
  EXPECT_NE(plan.summary.find("soft budget"), std::string::npos) << plan.summary;
}

TEST(Planner, TurnsAMonthlyCapIntoAnHourlyAllowance) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, OnDemandOnly(Unit("", 1)));
  s.month_to_date_usd = 900;
  s.hours_left_in_month = 100;  // (1000 - 900) / 100 = $1/h
  Policy p = BasePolicy();
  p.budget.global.monthly_usd = 1000;
  const Plan plan = MakePlan(s, p);
  EXPECT_LE(plan.cost_after_usd_per_hour, 1.0 + 1e-9);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 3);
}

TEST(Planner, ChargesAPoolsMonthlyCapWithThatPoolsSpendOnly) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, OnDemandOnly(Unit("", 1)));
  s.month_to_date_usd = 900;  // the fleet's, mostly other pools
  s.hours_left_in_month = 100;
  Policy p = BasePolicy();
  p.budget.per_pool["gpu"].monthly_usd = 1000;
  // The pool spent nothing yet: $10/h, room for all four g6.xlarge.
  Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  // The pool spent $900 of its $1000: $1/h, one node.
  s.month_to_date_usd_by_pool["gpu"] = 900;
  plan = MakePlan(s, p);
  EXPECT_LE(plan.cost_after_usd_per_hour, 1.0 + 1e-9);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 3);
}

TEST(Planner, ATeamCapCutsOnlyThatTeamsWorkAndSaysWhose) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("ml-", 4, OnDemandOnly(Unit("", 1)));
  for (const auto& u : Units("research-", 4, OnDemandOnly(Unit("", 1, 2000, 8192, "training")))) s.pending.push_back(u);
  Policy p = BasePolicy();
  p.classes[0].team = "ml";
  p.classes[1].team = "research";
  p.budget.per_team["ml"].hourly_usd = 2.0;  // two g6.xlarge at $0.805/h
  const Plan plan = MakePlan(s, p);
  ExpectValid(s, p, plan);
  ASSERT_EQ(plan.unplaced.size(), 2u) << plan.summary;
  for (const auto& u : plan.unplaced) {
    EXPECT_EQ(u.workload_class, "inference");
    EXPECT_EQ(u.reason, UnplacedReason::kBudget);
    EXPECT_NE(u.detail.find("team ml"), std::string::npos) << u.detail;
  }
}

TEST(Planner, ATeamIsChargedItsShareOfANodeLikeTheCostReport) {
  Snapshot s = BaseSnapshot();
  DemandUnit big_node_only = OnDemandOnly(Unit("", 1));
  big_node_only.instance_types = {"g6.12xlarge"};  // 4 L4 at $4.602/h: $1.1505 per GPU
  s.pending = Units("u", 4, big_node_only);
  Policy p = BasePolicy();
  p.classes[0].team = "ml";
  p.budget.per_team["ml"].hourly_usd = 2.5;  // two GPUs' worth
  Plan plan = MakePlan(s, p);
  ExpectValid(s, p, plan);
  EXPECT_EQ(LaunchedNodes(plan), 1);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 2) << plan.summary;
  // Work already running on such a node counts against the same cap.
  s.nodes.push_back(MakeNode(s, "n1", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.nodes.back().running = {Unit("running", 1)};
  plan = MakePlan(s, p);
  ExpectValid(s, p, plan);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 3) << plan.summary;
}

}  // namespace
}  // namespace gpuscaler::planner_budget_test
