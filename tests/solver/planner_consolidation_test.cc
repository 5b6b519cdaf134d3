// The planner's consolidation: empty nodes, moves into free room,
// replacements by cheaper nodes (one for two, two for two, one for four,
// staged), and the budgets, thresholds and warm-up that hold them back.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/consolidation_scenes.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "solver/planner_test_support.h"

namespace gpuscaler::planner_consolidation_test {
namespace {

using testing::AddOnDemandType;
using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ConsolidationSnapshot;
using testing::ExpectValid;
using testing::FourSingleGpuNodesSnapshot;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::PartlyIntoFreeRoomPolicy;
using testing::PartlyIntoFreeRoomSnapshot;
using testing::SplitSnapshot;
using testing::TwoNodesOneNodeHoldsSnapshot;
using testing::Unit;

TEST(Planner, TerminatesEmptyNodesAndConsolidatesWorkThatFitsElsewhere) {
  Snapshot s = ConsolidationSnapshot();
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  std::map<std::string, TerminationKind> kinds;
  for (const auto& t : plan.terminations) kinds[t.node_id] = t.kind;
  EXPECT_EQ(kinds.count("empty"), 1u);
  EXPECT_EQ(kinds["empty"], TerminationKind::kEmpty);
  ASSERT_EQ(kinds.count("small"), 1u);
  EXPECT_EQ(kinds["small"], TerminationKind::kConsolidate);
  EXPECT_EQ(kinds.count("big"), 0u);
  bool moved = false;
  for (const auto& pl : plan.placements) moved = moved || (pl.unit_id == "s1" && pl.node_id == "big");
  EXPECT_TRUE(moved);
  EXPECT_LT(plan.cost_after_usd_per_hour, plan.cost_before_usd_per_hour);
  ExpectValid(s, p, plan);
}

struct KeepCase {
  std::string name;
  std::function<void(Snapshot&, Policy&)> setup;
};

TEST(Planner, KeepsNodesThatMustNotBeDisrupted) {
  std::vector<KeepCase> cases = {
      {"do_not_disrupt flag", [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.do_not_disrupt = true; }},
      {"do-not-disrupt label",
       [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.labels["gpuscaler.io/do-not-disrupt"] = "true"; }},
      {"younger than min_node_age", [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.launch_time = s.time - Seconds(60); }},
      {"class with stale signals", [](Snapshot& s, Policy&) { s.scale_down_blocked_classes = {"inference"}; }},
      {"disruption budget used up (the empty node aside, which it does not hold)", [](Snapshot& s, Policy& p) {
         p.disruption.max_disrupted_per_interval = 2;
         s.recently_disrupted["gpu"] = 2;
         s.nodes.pop_back();
       }},
      {"consolidation off", [](Snapshot&, Policy& p) { p.disruption.consolidation = false; }},
      {"no removals per tick", [](Snapshot&, Policy& p) { p.scaling.max_nodes_removed_per_tick = 0; }},
      {"pool at min_nodes", [](Snapshot&, Policy& p) { p.pools[0].min_nodes = 3; }},
      {"node still launching", [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.state = NodeState::kLaunching; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = ConsolidationSnapshot();
    Policy p = BasePolicy();
    c.setup(s, p);
    const Plan plan = MakePlan(s, p);
    EXPECT_TRUE(plan.terminations.empty()) << plan.terminations[0].node_id;
  }
}

// Six nodes, each with one small on-demand unit on a g5.48xlarge: each is
// worth replacing by a g6.xlarge, a removal that moves work.
Snapshot OversizedNodesSnapshot(int n) {
  Snapshot s = BaseSnapshot();
  for (int i = 0; i < n; ++i) {
    const std::string id = "big" + std::to_string(i);
    s.nodes.push_back(MakeNode(s, id, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w-" + id, 1))}));
  }
  return s;
}

TEST(Planner, LimitsRemovalsToTheTickAndDisruptionBudgets) {
  Snapshot s = OversizedNodesSnapshot(6);
  Policy p = BasePolicy();
  p.scaling.max_nodes_removed_per_tick = 4;
  p.disruption.max_disrupted_per_interval = 3;
  s.recently_disrupted["gpu"] = 1;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 2u);
  s.recently_disrupted.clear();
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 3u);
  p.disruption.max_disrupted_per_interval = 10;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 4u);
}

// Removing an empty node moves no work: the disruption budget does not hold
// it back (the tick's removals and min_nodes still do), and it leaves the
// budget to the removals that move work.
TEST(Planner, EmptyNodesAreRemovedWhateverTheDisruptionBudgetLeaves) {
  Snapshot s = OversizedNodesSnapshot(2);
  for (int i = 0; i < 3; ++i) s.nodes.push_back(MakeNode(s, "e" + std::to_string(i), "g5.xlarge", "us-east-1a", CapacityType::kOnDemand));
  Policy p = BasePolicy();
  p.disruption.max_disrupted_per_interval = 1;
  auto removed = [&] {
    std::pair<int, int> empty_and_moved{0, 0};
    for (const auto& t : MakePlan(s, p).terminations)
      ++(t.kind == TerminationKind::kEmpty ? empty_and_moved.first : empty_and_moved.second);
    return empty_and_moved;
  };
  EXPECT_EQ(removed(), std::make_pair(3, 1));
  s.recently_disrupted["gpu"] = 5;  // past the budget: only the empty nodes go
  EXPECT_EQ(removed(), std::make_pair(3, 0));

  p.scaling.max_nodes_removed_per_tick = 2;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 2u);
  p.scaling.max_nodes_removed_per_tick = 5;
  p.pools[0].min_nodes = 4;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 1u);
}

// Empty nodes past the tick's removals are not actions, but the plan says how
// many it does not need (for the governor's scale-down recommendation), per
// pool, within min_nodes and only empty ones.
TEST(Planner, CountsTheEmptyNodesLeftForLaterTicks) {
  Snapshot s = OversizedNodesSnapshot(1);
  for (int i = 0; i < 5; ++i) s.nodes.push_back(MakeNode(s, "e" + std::to_string(i), "g5.xlarge", "us-east-1a", CapacityType::kOnDemand));
  Policy p = BasePolicy();
  p.scaling.max_nodes_removed_per_tick = 2;
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 2u);
  for (const auto& t : plan.terminations) EXPECT_EQ(t.kind, TerminationKind::kEmpty);
  EXPECT_EQ(plan.empty_nodes_left_by_pool, (std::map<std::string, int>{{"gpu", 3}}));
  EXPECT_NE(plan.summary.find("pool gpu: 3 more empty node(s) not needed, left for later ticks"), std::string::npos)
      << plan.summary;

  p.pools[0].min_nodes = 4;  // 6 nodes: 2 may go, both this tick
  plan = MakePlan(s, p);
  EXPECT_EQ(plan.terminations.size(), 2u);
  EXPECT_TRUE(plan.empty_nodes_left_by_pool.empty());
  p.pools[0].min_nodes = 3;  // one more may go later
  EXPECT_EQ(MakePlan(s, p).empty_nodes_left_by_pool, (std::map<std::string, int>{{"gpu", 1}}));

  p.pools[0].min_nodes = 0;
  p.scaling.max_nodes_removed_per_tick = 10;  // room for every empty node: none left
  plan = MakePlan(s, p);
  EXPECT_GE(plan.terminations.size(), 5u);
  EXPECT_TRUE(plan.empty_nodes_left_by_pool.empty());
}

TEST(Planner, RemovesNothingMoreInAPoolWhoseDisruptionWindowIsFull) {
  Snapshot s = BaseSnapshot();
  Policy p = BasePolicy();
  p.pools[0].name = "full";
  NodePoolPolicy other = p.pools[0];
  other.name = "other";
  p.pools.push_back(other);
  p.disruption.max_disrupted_per_interval = 2;
  for (const char* pool : {"full", "other"})
    for (const char* n : {"-0", "-1"})
      s.nodes.push_back(MakeNode(s, std::string(pool) + n, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand,
                                 {OnDemandOnly(Unit(std::string("w-") + pool + n, 1))}, pool));
  s.recently_disrupted["full"] = 2;  // at the limit within the interval
  s.recently_disrupted["other"] = 1;
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].pool, "other");
}

TEST(Planner, ReplacesANodeWithACheaperOne) {
  Snapshot s = BaseSnapshot();
  // One small unit on a big on-demand node: a g6.xlarge holds it for far less.
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w", 1))}));
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.xlarge");
  EXPECT_GT(plan.terminations[0].saves_usd_per_hour, p.disruption.min_savings_usd_per_hour);
  ExpectValid(s, p, plan);
  // Below the savings threshold nothing moves.
  p.disruption.min_savings_usd_per_hour = 100;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

TEST(Planner, ReplacesTwoNodesWithOneCheaperNodeThatHoldsBoth) {
  Snapshot s = TwoNodesOneNodeHoldsSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.2;  // the two save 1.61 - 1.323 = 0.287 $/h
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 2u);
  for (const auto& t : plan.terminations) {
    EXPECT_EQ(t.kind, TerminationKind::kReplace) << t.node_id;
    EXPECT_EQ(t.moved_unit_ids, std::vector<std::string>{"w-" + t.node_id});
  }
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].count, 1);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.4xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids.size(), 2u);
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 1.323, 1e-9);
  ExpectValid(s, p, plan);

  // Each removal moves work: a disruption budget of one allows neither.
  p.disruption.max_disrupted_per_interval = 1;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.max_disrupted_per_interval = 100;
  // Below the savings threshold, or with a node that must not be disrupted,
  // nothing moves.
  p.disruption.min_savings_usd_per_hour = 0.3;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.min_savings_usd_per_hour = 0.2;
  s.nodes[1].do_not_disrupt = true;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

std::vector<std::string> TerminatedNodes(const Plan& plan) {
  std::vector<std::string> ids;
  for (const auto& t : plan.terminations) ids.push_back(t.node_id);
  return ids;
}

// For two nodes replaced by one, min_savings_fraction is a share of both
// nodes' prices: 1.61 - 1.323 $/h less the moved work's restart cost (two
// 5-minute restarts of 0.4 of a 0.805 $/h node, 0.054 $ once) spread over
// the 24-hour replacement horizon saves 0.285 $/h, 17.7 % of 1.61.
TEST(Planner, TwoNodesReplacedByOneMustSaveTheFractionOfBothPrices) {
  Snapshot s = TwoNodesOneNodeHoldsSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.2;
  p.disruption.min_savings_fraction = 0.17;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 2u);
  p.disruption.min_savings_fraction = 0.18;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// The restart cost of the work a consolidation moves is paid once; it is
// spread over replacement_horizon, the hours the move has to pay for itself.
// Over one hour the same two restarts cost 0.054 $/h: 0.233 $/h saved, 14.5 %.
TEST(Planner, TheMovedWorksRestartCostIsSpreadOverTheReplacementHorizon) {
  Snapshot s = TwoNodesOneNodeHoldsSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.2;
  p.disruption.min_savings_fraction = 0.15;
  const Plan over_a_day = MakePlan(s, p);
  ASSERT_EQ(over_a_day.terminations.size(), 2u);
  EXPECT_NE(over_a_day.terminations[0].reason.find("save $0.28/h after $0.00/h disruption cost"), std::string::npos)
      << over_a_day.terminations[0].reason;
  p.disruption.replacement_horizon = Seconds(3600);
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.min_savings_fraction = 0.14;
  const Plan over_an_hour = MakePlan(s, p);
  ASSERT_EQ(over_an_hour.terminations.size(), 2u);
  EXPECT_NE(over_an_hour.terminations[0].reason.find("save $0.23/h after $0.05/h disruption cost"), std::string::npos)
      << over_an_hour.terminations[0].reason;
}

TEST(Planner, SplitsTwoLongRunningNodesWorkOntoTwoCheaperNewNodes) {
  Snapshot s = SplitSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.3;

  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), (std::vector<std::string>{"a", "b"})) << plan.summary;
  for (const auto& t : plan.terminations) {
    EXPECT_EQ(t.kind, TerminationKind::kReplace) << t.node_id;
    EXPECT_NE(t.reason.find("the two save $0.5"), std::string::npos) << t.reason;
  }
  std::map<std::string, std::set<std::string>> units_by_type;
  for (const auto& l : plan.launches) {
    EXPECT_EQ(l.count, 1) << l.offering.instance_type;
    units_by_type[l.offering.instance_type].insert(l.unit_ids.begin(), l.unit_ids.end());
  }
  EXPECT_EQ(units_by_type, (std::map<std::string, std::set<std::string>>{
                               {"g6.8xlarge", {"cpu-heavy", "replica"}}, {"g6.xlarge", {"small"}}}));
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 2.014 + 0.805, 1e-9);
  ExpectValid(s, p, plan);

  // Both removals move work: a disruption budget of one allows neither; a
  // saving under the threshold moves nothing either.
  p.disruption.max_disrupted_per_interval = 1;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.max_disrupted_per_interval = 100;
  p.disruption.min_savings_usd_per_hour = 0.6;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  // Only placements that have lasted six hours are split.
  p.disruption.min_savings_usd_per_hour = 0.3;
  s.nodes[1].launch_time = s.time - Seconds(5 * 3600);
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// A split's reason names the other node and both new types, and a split
// whose saving over replacement_horizon does not cover the new nodes'
// warm-up (both paid while they warm up) is not made.
TEST(Planner, ASplitSaysWhatReplacesWhatAndMustPayBackTheWarmUp) {
  Snapshot s = SplitSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.3;
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), (std::vector<std::string>{"a", "b"})) << plan.summary;
  const std::string& reason = plan.terminations[0].reason;
  EXPECT_EQ(reason.rfind("replaced, with b, by ", 0), 0u) << reason;
  EXPECT_NE(reason.find("g6.8xlarge"), std::string::npos) << reason;
  EXPECT_NE(reason.find("g6.xlarge"), std::string::npos) << reason;
  EXPECT_NE(reason.find("at $2.82/h: the two save"), std::string::npos) << reason;

  // About 0.51 $/h saved over 24 hours (12 $) against a day's warm-up of
  // both new nodes (2.819 $/h x 24 h): not made.
  s.warmup_seconds_by_family["g6"] = 24 * 3600;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

TEST(Planner, ReplacesANodeByACheaperOneForTheUnitsThatDoNotFitOtherNodesFreeRoom) {
  Snapshot s = PartlyIntoFreeRoomSnapshot();
  Policy p = PartlyIntoFreeRoomPolicy();

  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), std::vector<std::string>{"a"}) << plan.summary;
  const TerminationAction& t = plan.terminations[0];
  EXPECT_EQ(t.kind, TerminationKind::kReplace);
  EXPECT_EQ(std::set<std::string>(t.moved_unit_ids.begin(), t.moved_unit_ids.end()),
            (std::set<std::string>{"cpu-heavy", "small"}));
  EXPECT_EQ(t.reason.rfind("replaced by m5.8xlarge", 0), 0u) << t.reason;
  EXPECT_NE(t.reason.find("(1 of its units to other nodes' free room): saves $0.4"), std::string::npos)
      << t.reason;
  std::map<std::string, std::string> node_of;
  for (const auto& pl : plan.placements)
    node_of[pl.unit_id] = pl.launch_index >= 0 ? "launch " + std::to_string(pl.launch_index) : pl.node_id;
  EXPECT_EQ(node_of, (std::map<std::string, std::string>{{"small", "r"}, {"cpu-heavy", "launch 0"}}));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.8xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids, std::vector<std::string>{"cpu-heavy"});
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 4.602 + 1.536, 1e-9);
  ExpectValid(s, p, plan);

  // Under the savings threshold, nothing moves.
  p.disruption.min_savings_usd_per_hour = 0.5;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.min_savings_usd_per_hour = 0.3;
  // Without the free L4, no node holds both units for less.
  s.nodes[0].running.push_back(OnDemandOnly(Unit("fourth", 1, 4000, 16384)));
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// Where one new node also holds both units, the replacement that saves more
// is made: a 1-L4, 24-vCPU node at 1.70 $/h saves 0.31 $/h against the
// partial move's 0.48; at 1.20 $/h it saves 0.81 and takes both units.
TEST(Planner, MakesWhicheverReplacementSavesMoreTheWholeNodesWorkOrPartOfIt) {
  const Policy p = PartlyIntoFreeRoomPolicy();
  for (double price : {1.70, 1.20}) {
    SCOPED_TRACE(price);
    Snapshot s = PartlyIntoFreeRoomSnapshot();
    AddOnDemandType(s, testing::Type("g6.6xlarge", "g6", "NVIDIA-L4", 1, 23034, 24, 96), price);
    const Plan plan = MakePlan(s, p);
    ASSERT_EQ(TerminatedNodes(plan), std::vector<std::string>{"a"}) << plan.summary;
    ASSERT_EQ(plan.launches.size(), 1u);
    if (price > 1.5) {
      EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.8xlarge");
      EXPECT_EQ(plan.launches[0].unit_ids, std::vector<std::string>{"cpu-heavy"});
    } else {
      EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.6xlarge");
      EXPECT_EQ(plan.launches[0].unit_ids.size(), 2u);
      EXPECT_EQ(plan.terminations[0].reason.find("free room"), std::string::npos)
          << plan.terminations[0].reason;
    }
    ExpectValid(s, p, plan);
  }
}

// Only lasting placements on on-demand nodes are split this way: a node
// younger than six hours, or a spot node (whose work its pool's next reclaim
// places afresh anyway), keeps its work.
TEST(Planner, SendsPartOfANodesWorkToFreeRoomOnlyFromLastingOnDemandNodes) {
  const Policy p = PartlyIntoFreeRoomPolicy();
  Snapshot young = PartlyIntoFreeRoomSnapshot();
  young.nodes[1].launch_time = young.time - Seconds(5 * 3600);
  EXPECT_TRUE(MakePlan(young, p).terminations.empty()) << MakePlan(young, p).summary;

  // On spot at 90 % of on-demand, with an m5.8xlarge at 40 %: a saving of
  // more than 1 $/h the partial move would make from an on-demand node.
  Snapshot spot = PartlyIntoFreeRoomSnapshot();
  spot.offerings.push_back(
      testing::MakeOffering("g6.8xlarge", "us-east-1a", CapacityType::kSpot, 2.014, 0.9));
  spot.offerings.push_back(testing::MakeOffering("m5.8xlarge", "us-east-1a", CapacityType::kSpot, 1.536));
  spot.nodes[1] = MakeNode(spot, "a", "g6.8xlarge", "us-east-1a", CapacityType::kSpot,
                           {Unit("cpu-heavy", 0, 20000, 65536), Unit("small", 1, 4000, 16384)});
  spot.nodes[1].launch_time = spot.time - Seconds(7 * 3600);
  const Plan plan = MakePlan(spot, p);
  EXPECT_TRUE(plan.terminations.empty()) << plan.summary;
}

TEST(Planner, ReplacesFourNodesWithOneLargerNodeWhenTheDisruptionBudgetAllowsFour) {
  Snapshot s = FourSingleGpuNodesSnapshot();
  Policy p = BasePolicy();
  p.disruption.max_disrupted_per_interval = 4;
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), (std::vector<std::string>{"a", "b", "c", "d"})) << plan.summary;
  for (const auto& t : plan.terminations) {
    EXPECT_EQ(t.kind, TerminationKind::kReplace) << t.node_id;
    EXPECT_EQ(t.moved_unit_ids, std::vector<std::string>{"w-" + t.node_id});
    EXPECT_NE(t.reason.find("the 4 save"), std::string::npos) << t.reason;
    EXPECT_EQ(t.reason.find("to follow"), std::string::npos) << t.reason;
  }
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].count, 1);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.12xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids.size(), 4u);
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 4.602, 1e-9);
  ExpectValid(s, p, plan);

  // A node that must not be disrupted leaves three, which no cheaper node holds.
  s.nodes[2].do_not_disrupt = true;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// With a budget of two, the group is staged: the new node is sized for all
// four, the budget's two move now (the bill is higher until the rest follow),
// and the next plan moves the other two into its free room, each a
// single-node move that saves its whole price.
TEST(Planner, StagesAGroupLargerThanTheDisruptionBudgetAndTheRestFollow) {
  Snapshot s = FourSingleGpuNodesSnapshot();
  Policy p = BasePolicy();
  p.disruption.max_disrupted_per_interval = 2;
  const Plan first = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(first), (std::vector<std::string>{"a", "b"})) << first.summary;
  for (const auto& t : first.terminations)
    EXPECT_NE(t.reason.find("the 4 (2 to follow into its free room) save"), std::string::npos) << t.reason;
  ASSERT_EQ(first.launches.size(), 1u);
  EXPECT_EQ(first.launches[0].offering.instance_type, "g6.12xlarge");
  EXPECT_EQ(first.launches[0].unit_ids, (std::vector<std::string>{"w-a", "w-b"}));
  EXPECT_NEAR(first.cost_after_usd_per_hour, 4.602 + 2 * 1.323, 1e-9);
  ExpectValid(s, p, first);

  // The new node is up, holding the two; the budget's window has passed.
  Snapshot next = s;
  next.nodes.erase(next.nodes.begin(), next.nodes.begin() + 2);
  next.nodes.push_back(MakeNode(next, "new", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                                {s.nodes[0].running[0], s.nodes[1].running[0]}));
  next.nodes.back().launch_time = next.time - Seconds(900);
  const Plan second = MakePlan(next, p);
  ASSERT_EQ(TerminatedNodes(second), (std::vector<std::string>{"c", "d"})) << second.summary;
  for (const auto& t : second.terminations) EXPECT_EQ(t.kind, TerminationKind::kConsolidate) << t.node_id;
  EXPECT_TRUE(second.launches.empty());
  EXPECT_NEAR(second.cost_after_usd_per_hour, 4.602, 1e-9);
  ExpectValid(next, p, second);

  // A budget of one stages nothing: one node moved into a larger one alone
  // would be undone by the next plan's single-node replacement.
  p.disruption.max_disrupted_per_interval = 1;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

TEST(Planner, AReplacementWhoseSavingOverTheHorizonDoesNotCoverTheWarmUpOverlapIsNotMade) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w", 1))}));
  Policy p = BasePolicy();
  // A one-minute horizon: the saving of a minute against the new node's
  // price over its warm-up.
  p.disruption.replacement_horizon = Seconds(60);
  s.warmup_seconds_by_family = {{"g6", 120}};
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.xlarge");
  ExpectValid(s, p, plan);

  // g6 nodes learned to take half an hour: the g6 move no longer pays; the
  // next offering whose warm-up (the catalog's) it covers is taken.
  s.warmup_seconds_by_family = {{"g6", 1800}};
  plan = MakePlan(s, p);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_NE(plan.launches[0].offering.instance_type.rfind("g6.", 0), 0u) << plan.launches[0].offering.instance_type;
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);

  // Every family that slow: no replacement at all.
  for (const InstanceType& t : s.instance_types) s.warmup_seconds_by_family[t.family.empty() ? t.name : t.family] = 1800;
  plan = MakePlan(s, p);
  EXPECT_TRUE(plan.terminations.empty());
  EXPECT_TRUE(plan.launches.empty());
}

TEST(Planner, ReplacesAGpuNodeThatOnlyHoldsCpuWork) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "gpu", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("cpu-only", 0, 2000, 4096)}));
  Policy p = BasePolicy();
  p.pools[0].families = {"g5", "g6", "p4de", "m5"};
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.xlarge");
  ExpectValid(s, p, plan);
}

}  // namespace
}  // namespace gpuscaler::planner_consolidation_test
