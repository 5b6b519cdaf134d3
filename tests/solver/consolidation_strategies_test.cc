// Each consolidation strategy alone (src/solver/consolidation.h): the
// planner run with only that strategy makes its move on the scene built for
// it, and the other strategies alone do not make that move.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/consolidation_scenes.h"
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

struct NamedStrategy {
  ConsolidationStrategy strategy;
  const char* name;
};
constexpr NamedStrategy kAll[] = {{ConsolidationStrategy::kEmpty, "empty"},
                                  {ConsolidationStrategy::kDelete, "delete"},
                                  {ConsolidationStrategy::kReplace, "replace"},
                                  {ConsolidationStrategy::kPartToFreeRoom, "part to free room"},
                                  {ConsolidationStrategy::kGroups, "groups"},
                                  {ConsolidationStrategy::kSplit, "split"}};

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

// The planner tests' consolidation scenes (consolidation_scenes.h) with
// their policies, and one more.
Scene EmptyAndMovableScene() { return {testing::ConsolidationSnapshot(), BasePolicy()}; }

// One small on-demand unit on a big node: a g6.xlarge holds it for far less.
Scene OversizedNodeScene() {
  Scene c{BaseSnapshot(), BasePolicy()};
  c.snapshot.nodes.push_back(MakeNode(c.snapshot, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand,
                                      {OnDemandOnly(Unit("w", 1))}));
  return c;
}

Scene PartlyIntoFreeRoomScene() {
  return {testing::PartlyIntoFreeRoomSnapshot(), testing::PartlyIntoFreeRoomPolicy()};
}

Scene FourNodesOneHoldsScene() {
  Scene c{testing::FourSingleGpuNodesSnapshot(), BasePolicy()};
  c.policy.disruption.max_disrupted_per_interval = 4;
  return c;
}

Scene SplitScene() {
  Scene c{testing::SplitSnapshot(), BasePolicy()};
  c.policy.disruption.min_savings_usd_per_hour = 0.3;
  return c;
}

// Runs `scene` with each strategy alone: `strategy` must make `want`, every
// other strategy none of those terminations (the same node may go another
// way: a replacement where a deletion was wanted).
void ExpectOnlyStrategyMakes(const Scene& scene, ConsolidationStrategy strategy,
                             const std::vector<std::pair<std::string, TerminationKind>>& want) {
  for (const auto& [other, name] : kAll) {
    SCOPED_TRACE(std::string("only ") + name);
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
  for (const auto& [other, name] : kAll) {
    if (other == ConsolidationStrategy::kPartToFreeRoom) continue;
    SCOPED_TRACE(std::string("only ") + name);
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
