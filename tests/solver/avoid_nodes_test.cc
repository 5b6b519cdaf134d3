// DemandUnit::avoid_nodes: the planner never puts a unit on an existing node
// it avoids (on Kubernetes, a node whose taints its pod does not tolerate),
// neither pending work in free room nor running work that consolidation
// moves.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/solver/planner.h"
#include "solver/consolidation_scenes.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;

bool PlacedOn(const Plan& plan, const std::string& unit, const std::string& node) {
  for (const Placement& p : plan.placements)
    if (p.unit_id == unit && p.node_id == node) return true;
  return false;
}

TEST(AvoidNodes, PendingWorkTakesNoFreeRoomOnANodeItAvoids) {
  // An empty on-demand g5.12xlarge has room for the unit.
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "tainted", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                             {OnDemandOnly(Unit("r", 1))}));
  s.pending = {OnDemandOnly(Unit("u", 1))};
  Policy p = BasePolicy();
  p.disruption.consolidation = false;
  const Plan free = MakePlan(s, p);
  ASSERT_TRUE(PlacedOn(free, "u", "tainted")) << "the scene must offer the room";
  EXPECT_EQ(LaunchedNodes(free), 0);

  s.pending[0].avoid_nodes = {"tainted"};
  const Plan avoided = MakePlan(s, p);
  EXPECT_FALSE(PlacedOn(avoided, "u", "tainted"));
  EXPECT_EQ(LaunchedNodes(avoided), 1);
  EXPECT_TRUE(avoided.unplaced.empty());
  ExpectValid(s, p, avoided);
}

TEST(AvoidNodes, ConsolidationMovesNoRunningWorkOntoANodeItAvoids) {
  // Node "small"'s one unit fits node "big"'s free room: consolidation
  // deletes "small" by moving the unit there, unless the unit avoids "big".
  Snapshot s = testing::ConsolidationSnapshot();
  const Policy p = BasePolicy();
  ASSERT_TRUE(PlacedOn(MakePlan(s, p), "s1", "big")) << "the scene must move the unit";
  s.nodes[1].running[0].avoid_nodes = {"big"};
  const Plan plan = MakePlan(s, p);
  EXPECT_FALSE(PlacedOn(plan, "s1", "big"));
  ExpectValid(s, p, plan);
}

}  // namespace
}  // namespace gpuscaler
