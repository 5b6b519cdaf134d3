// Each consolidation strategy alone (src/solver/consolidation.h): the
// planner run with only that strategy makes its move on the scene built for
// it, and the other strategies alone do not make that move.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "src/solver/consolidation.h"

// A named namespace: the solver tests build as one unity file, and the
// other files' helpers have names like these.
namespace gpuscaler::consolidation_strategies_test {

using solver_detail::ConsolidationStrategies;
using solver_detail::ConsolidationStrategy;
using solver_detail::PlanWithConsolidationStrategies;
using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;
using testing::Units;

constexpr ConsolidationStrategy kAll[] = {
    ConsolidationStrategy::kEmpty,          ConsolidationStrategy::kDelete, ConsolidationStrategy::kReplace,
    ConsolidationStrategy::kPartToFreeRoom, ConsolidationStrategy::kGroups, ConsolidationStrategy::kSplit};

std::string NameOf(ConsolidationStrategy s) {
  switch (s) {
    case ConsolidationStrategy::kEmpty:
      return "empty";
    case ConsolidationStrategy::kDelete:
      return "delete";
    case ConsolidationStrategy::kReplace:
      return "replace";
    case ConsolidationStrategy::kPartToFreeRoom:
      return "part to free room";
    case ConsolidationStrategy::kGroups:
      return "groups";
    case ConsolidationStrategy::kSplit:
      return "split";
  }
  return "?";
}

void AddOnDemandType(Snapshot& s, InstanceType type, double usd_per_hour) {
  s.offerings.push_back(
      testing::MakeOffering(type.name, "us-east-1a", CapacityType::kOnDemand, usd_per_hour));
  s.instance_types.push_back(std::move(type));
}

// The nodes a plan terminates, each with its kind, in plan order.
std::vector<std::pair<std::string, TerminationKind>> Terminations(const Plan& plan) {
  std::vector<std::pair<std::string, TerminationKind>> out;
  for (const auto& t : plan.terminations) out.emplace_back(t.node_id, t.kind);
  return out;
}

std::vector<std::string> LaunchedTypes(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& l : plan.launches)
    for (int i = 0; i < l.count; ++i) out.push_back(l.offering.instance_type);
  return out;
}

struct Scene {
  Snapshot snapshot;
  Policy policy;
};

// A half-used 4-GPU node, a 1-GPU node whose unit fits on it, an empty node.
Scene EmptyAndMovableScene() {
  Scene c{BaseSnapshot(), BasePolicy()};
  Snapshot& s = c.snapshot;
  s.nodes.push_back(MakeNode(s, "big", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                             {Unit("b1", 1), Unit("b2", 1)}));
  s.nodes.push_back(
      MakeNode(s, "small", "g5.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("s1", 1)}));
  s.nodes.push_back(MakeNode(s, "empty", "g5.xlarge", "us-east-1b", CapacityType::kOnDemand));
  return c;
}

// One small on-demand unit on a big node: a g6.xlarge holds it for far less.
Scene OversizedNodeScene() {
  Scene c{BaseSnapshot(), BasePolicy()};
  c.snapshot.nodes.push_back(MakeNode(c.snapshot, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand,
                                      {OnDemandOnly(Unit("w", 1))}));
  return c;
}

// A lasting on-demand node with a CPU-heavy unit and a small GPU unit: the
// small one fits the free L4 of a node that stays ("r"), the CPU-heavy one
// alone an m5.8xlarge, cheaper than the node they share.
Scene PartlyIntoFreeRoomScene() {
  Scene c{BaseSnapshot({"us-east-1a"}), BasePolicy()};
  Snapshot& s = c.snapshot;
  AddOnDemandType(s, testing::Type("g6.8xlarge", "g6", "NVIDIA-L4", 1, 23034, 32, 128), 2.014);
  AddOnDemandType(s, testing::Type("m5.8xlarge", "m5", "", 0, 0, 32, 128), 1.536);
  Node r = MakeNode(s, "r", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                    Units("busy", 3, OnDemandOnly(Unit("", 1, 12000, 32768))));
  r.do_not_disrupt = true;
  s.nodes.push_back(r);
  s.nodes.push_back(MakeNode(
      s, "a", "g6.8xlarge", "us-east-1a", CapacityType::kOnDemand,
      {OnDemandOnly(Unit("cpu-heavy", 0, 20000, 65536)), OnDemandOnly(Unit("small", 1, 4000, 16384))}));
  s.nodes[1].launch_time = s.time - Seconds(7 * 3600);
  c.policy.pools[0].families = {"g6", "m5"};
  c.policy.disruption.min_savings_usd_per_hour = 0.3;
  return c;
}

// Four single-GPU nodes, none of which can go alone, that one g6.12xlarge
// holds for less; the disruption budget allows all four.
Scene FourNodesOneHoldsScene() {
  Scene c{BaseSnapshot({"us-east-1a"}), BasePolicy()};
  Snapshot& s = c.snapshot;
  AddOnDemandType(s, testing::Type("g6.4xlarge", "g6", "NVIDIA-L4", 1, 23034, 16, 64), 1.323);
  for (const std::string id : {"a", "b", "c", "d"}) {
    DemandUnit u = OnDemandOnly(Unit("w-" + id, 1));
    u.cpu_milli = 10000;
    u.restart_cost = Seconds(60);
    s.nodes.push_back(MakeNode(s, id, "g6.4xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
  }
  c.policy.disruption.max_disrupted_per_interval = 4;
  return c;
}

// Two lasting nodes whose three units, split the other way, fit two cheaper
// new nodes; no single node holds all three for less.
Scene SplitScene() {
  Scene c{BaseSnapshot({"us-east-1a"}), BasePolicy()};
  Snapshot& s = c.snapshot;
  AddOnDemandType(s, testing::Type("g6.8xlarge", "g6", "NVIDIA-L4", 1, 23034, 32, 128), 2.014);
  AddOnDemandType(s, testing::Type("g6.4xlarge", "g6", "NVIDIA-L4", 1, 23034, 16, 64), 1.323);
  s.nodes.push_back(MakeNode(
      s, "a", "g6.8xlarge", "us-east-1a", CapacityType::kOnDemand,
      {OnDemandOnly(Unit("cpu-heavy", 0, 20000, 65536)), OnDemandOnly(Unit("small", 1, 4000, 16384))}));
  s.nodes.push_back(MakeNode(s, "b", "g6.4xlarge", "us-east-1a", CapacityType::kOnDemand,
                             {OnDemandOnly(Unit("replica", 1, 12000, 16384))}));
  for (Node& n : s.nodes) n.launch_time = s.time - Seconds(7 * 3600);
  c.policy.disruption.min_savings_usd_per_hour = 0.3;
  return c;
}

// Runs `scene` with each strategy alone: `strategy` must make `want`, every
// other strategy none of those terminations (the same node may go another
// way: a replacement where a deletion was wanted).
void ExpectOnlyStrategyMakes(const Scene& scene, ConsolidationStrategy strategy,
                             const std::vector<std::pair<std::string, TerminationKind>>& want) {
  for (ConsolidationStrategy other : kAll) {
    SCOPED_TRACE("only " + NameOf(other));
    const Plan plan =
        PlanWithConsolidationStrategies(scene.snapshot, scene.policy, ConsolidationStrategies::Only(other));
    testing::ExpectValid(scene.snapshot, scene.policy, plan);
    if (other == strategy) {
      EXPECT_EQ(Terminations(plan), want) << plan.summary;
    } else {
      for (const auto& made : Terminations(plan))
        for (const auto& wanted : want) EXPECT_NE(made, wanted) << made.first << "\n" << plan.summary;
    }
  }
}

TEST(ConsolidationStrategies, EmptyRemovesOnlyTheEmptyNode) {
  ExpectOnlyStrategyMakes(EmptyAndMovableScene(), ConsolidationStrategy::kEmpty,
                          {{"empty", TerminationKind::kEmpty}});
}

TEST(ConsolidationStrategies, DeleteMovesANodesWorkIntoOtherNodesFreeRoom) {
  const Scene scene = EmptyAndMovableScene();
  ExpectOnlyStrategyMakes(scene, ConsolidationStrategy::kDelete, {{"small", TerminationKind::kConsolidate}});
  // The unit goes to existing free room, never a new node: alone, to the
  // empty node that stays; with the empty node gone, to the half-used one.
  const Plan alone = PlanWithConsolidationStrategies(
      scene.snapshot, scene.policy, ConsolidationStrategies::Only(ConsolidationStrategy::kDelete));
  ASSERT_EQ(alone.placements.size(), 1u);
  EXPECT_EQ(alone.placements[0].unit_id, "s1");
  EXPECT_EQ(alone.placements[0].node_id, "empty");
  EXPECT_TRUE(alone.launches.empty());
  const ConsolidationStrategies with_empty{
      uint8_t(uint8_t(ConsolidationStrategy::kEmpty) | uint8_t(ConsolidationStrategy::kDelete))};
  const Plan plan = PlanWithConsolidationStrategies(scene.snapshot, scene.policy, with_empty);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "big");
  EXPECT_TRUE(plan.launches.empty());
}

TEST(ConsolidationStrategies, ReplaceMovesANodesWorkToOneCheaperNewNode) {
  const Scene scene = OversizedNodeScene();
  ExpectOnlyStrategyMakes(scene, ConsolidationStrategy::kReplace, {{"big", TerminationKind::kReplace}});
  const Plan plan = PlanWithConsolidationStrategies(
      scene.snapshot, scene.policy, ConsolidationStrategies::Only(ConsolidationStrategy::kReplace));
  EXPECT_EQ(LaunchedTypes(plan), std::vector<std::string>{"g6.xlarge"});
}

TEST(ConsolidationStrategies, PartToFreeRoomSendsTheUnitsThatFitThereAndReplacesTheRest) {
  const Scene scene = PartlyIntoFreeRoomScene();
  const Plan plan = PlanWithConsolidationStrategies(
      scene.snapshot, scene.policy, ConsolidationStrategies::Only(ConsolidationStrategy::kPartToFreeRoom));
  ASSERT_EQ(Terminations(plan),
            (std::vector<std::pair<std::string, TerminationKind>>{{"a", TerminationKind::kReplace}}))
      << plan.summary;
  EXPECT_NE(plan.terminations[0].reason.find("(1 of its units to other nodes' free room)"), std::string::npos)
      << plan.terminations[0].reason;
  EXPECT_EQ(LaunchedTypes(plan), std::vector<std::string>{"m5.8xlarge"});
  testing::ExpectValid(scene.snapshot, scene.policy, plan);
  // Without it, no strategy sends part of the node's work to free room.
  for (ConsolidationStrategy other : kAll) {
    if (other == ConsolidationStrategy::kPartToFreeRoom) continue;
    SCOPED_TRACE("only " + NameOf(other));
    const Plan alone =
        PlanWithConsolidationStrategies(scene.snapshot, scene.policy, ConsolidationStrategies::Only(other));
    for (const auto& t : alone.terminations)
      EXPECT_EQ(t.reason.find("free room"), std::string::npos) << t.reason;
  }
}

TEST(ConsolidationStrategies, GroupsReplaceSeveralNodesOfAPoolByOneCheaperNode) {
  ExpectOnlyStrategyMakes(FourNodesOneHoldsScene(), ConsolidationStrategy::kGroups,
                          {{"a", TerminationKind::kReplace},
                           {"b", TerminationKind::kReplace},
                           {"c", TerminationKind::kReplace},
                           {"d", TerminationKind::kReplace}});
  const Scene scene = FourNodesOneHoldsScene();
  const Plan plan = PlanWithConsolidationStrategies(
      scene.snapshot, scene.policy, ConsolidationStrategies::Only(ConsolidationStrategy::kGroups));
  EXPECT_EQ(LaunchedTypes(plan), std::vector<std::string>{"g6.12xlarge"});
}

TEST(ConsolidationStrategies, SplitPutsTwoNodesWorkOnTwoCheaperNewNodes) {
  ExpectOnlyStrategyMakes(SplitScene(), ConsolidationStrategy::kSplit,
                          {{"a", TerminationKind::kReplace}, {"b", TerminationKind::kReplace}});
  const Scene scene = SplitScene();
  const Plan plan = PlanWithConsolidationStrategies(
      scene.snapshot, scene.policy, ConsolidationStrategies::Only(ConsolidationStrategy::kSplit));
  EXPECT_EQ(plan.launches.size(), 2u);
}

TEST(ConsolidationStrategies, AllStrategiesTogetherAreThePlannersConsolidation) {
  for (const Scene& scene : {EmptyAndMovableScene(), OversizedNodeScene(), PartlyIntoFreeRoomScene(),
                             FourNodesOneHoldsScene(), SplitScene()}) {
    const Plan all = PlanWithConsolidationStrategies(scene.snapshot, scene.policy, ConsolidationStrategies{});
    const Plan plan = MakePlan(scene.snapshot, scene.policy);
    EXPECT_EQ(Terminations(all), Terminations(plan));
    EXPECT_EQ(LaunchedTypes(all), LaunchedTypes(plan));
  }
}

}  // namespace gpuscaler::consolidation_strategies_test
