// A pool's max_nodes as a scarce resource: once a plan takes a pool past
// 70 % of its cap, new nodes there are chosen for the GPUs each slot holds.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::LaunchedNodes;
using testing::LaunchesOf;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;
using testing::Units;

// `busy` on-demand g6.xlarge nodes, each running one 1-GPU unit, and
// `pending` 1-GPU units that must run on on-demand capacity, in a pool
// capped at `max_nodes`; no consolidation (these are scale-up scenes).
struct Scene {
  Snapshot snapshot;
  Policy policy;
};

Scene SmallNodesAndOneGpuWork(int busy, int pending, int max_nodes) {
  Scene scene{BaseSnapshot(), BasePolicy()};
  scene.policy.pools[0].max_nodes = max_nodes;
  scene.policy.disruption.consolidation = false;
  for (int i = 0; i < busy; ++i)
    scene.snapshot.nodes.push_back(MakeNode(scene.snapshot, "n" + std::to_string(i), "g6.xlarge", "us-east-1a",
                                            CapacityType::kOnDemand, {Unit("r" + std::to_string(i), 1)}));
  scene.snapshot.pending = Units("u", pending, OnDemandOnly(Unit("", 1)));
  return scene;
}

// The plan puts every pending unit on one new g5.48xlarge, the cheapest of
// the 8-GPU types.
void ExpectOneEightGpuNodeHoldsAll(const Scene& scene) {
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(LaunchedNodes(plan), 1);
  EXPECT_EQ(LaunchesOf(plan, "g5.48xlarge"), 1);
  EXPECT_TRUE(plan.unplaced.empty());
  ExpectValid(scene.snapshot, scene.policy, plan);
}

TEST(NodeSlots, WellBelowTheCapEachUnitGetsTheCheapestNodeThatHoldsIt) {
  // 4 + 3 nodes of a cap of 10 (70 %, not past it): slots are not scarce; three g6.xlarge
  // (3 x 0.805 USD/h) are cheaper than any one node holding three units.
  Scene scene = SmallNodesAndOneGpuWork(4, 3, 10);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(LaunchesOf(plan, "g6.xlarge"), 3);
  EXPECT_EQ(LaunchedNodes(plan), 3);
  ExpectValid(scene.snapshot, scene.policy, plan);
}

TEST(NodeSlots, NearTheCapTheWorkGoesOnANodeThatHoldsTheMostGpus) {
  // The same work in a pool capped at 9: three g6.xlarge would take it to
  // 7 of 9 nodes. One 8-GPU node holds the three units and leaves five
  // GPUs for what comes next, where the three small nodes would leave none
  // and two slots fewer.
  ExpectOneEightGpuNodeHoldsAll(SmallNodesAndOneGpuWork(4, 3, 9));
}

TEST(NodeSlots, WorkThatTheCheapestNodesLeaveAtTheCapIsPlacedOnLargerOnes) {
  // One slot left (4 of 5 nodes) for six units: the cheapest node holds one
  // and leaves five unplaced at max_nodes; one 8-GPU node holds all six.
  ExpectOneEightGpuNodeHoldsAll(SmallNodesAndOneGpuWork(4, 6, 5));
}

TEST(NodeSlots, ScarceSlotsChangeWhichNodesAreBoughtNotWhatThePlanCosts) {
  // The slot price decides between options; the plan's cost is the
  // nodes' price: one g5.48xlarge, on-demand.
  Scene scene = SmallNodesAndOneGpuWork(4, 3, 9);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_NEAR(plan.launches[0].usd_per_hour, 16.288, 1e-9);
  EXPECT_NEAR(plan.cost_after_usd_per_hour - plan.cost_before_usd_per_hour, 16.288, 1e-9);
}

}  // namespace
}  // namespace gpuscaler
