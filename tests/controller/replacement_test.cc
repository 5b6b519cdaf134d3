// "Replace with cheaper" launches the new node first and removes the old one
// only once the new one can take its work.
#include <gtest/gtest.h>

#include "fake_cluster_nodes.h"
#include "lifecycle_harness.h"

namespace gpuscaler {
namespace {

using testing::FakeClusterNodes;
using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

Policy ReplacePolicy() {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.pools[0].capacity_types = {CapacityType::kOnDemand, CapacityType::kSpot};
  p.disruption.consolidation = true;
  p.disruption.min_node_age = Seconds(0);
  p.disruption.min_savings_usd_per_hour = 0.1;
  return p;
}

// An on-demand node running one unit, where spot costs 40 %: the planner
// replaces it with a spot node.
struct ReplaceScene : LifecycleScene {
  FakeClusterNodes nodes{clock};
  const std::string old_id = "i-old";
  explicit ReplaceScene(bool with_kubernetes, Policy policy = ReplacePolicy()) : LifecycleScene(std::move(policy)) {
    if (with_kubernetes) controller->SetClusterNodes(&nodes);
    AddRunningNode(old_id, "g5.xlarge/us-east-1a/on-demand", {GpuUnit("a")});
    nodes.Register(old_id);
  }
  std::string NewId() const {
    for (const Node& n : controller->snapshot().nodes) {
      if (n.instance_id != old_id) return n.instance_id;
    }
    return "";
  }
};

TEST(Replacement, TheOldNodeIsDrainedOnlyOnceTheNewOneHasItsGpus) {
  ReplaceScene s(/*with_kubernetes=*/true);
  TickReport first = s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u) << first.plan.summary;
  EXPECT_EQ(s.fake.launches[0].offerings[0].capacity_type, CapacityType::kSpot);
  ASSERT_EQ(first.plan.terminations.size(), 1u);
  EXPECT_EQ(first.plan.terminations[0].kind, TerminationKind::kReplace);
  EXPECT_TRUE(s.fake.terminations.empty());
  EXPECT_TRUE(s.nodes.begun.empty()) << "no drain before the replacement is ready";
  ASSERT_NE(s.Find(s.old_id), nullptr);
  EXPECT_EQ(s.Find(s.old_id)->state, NodeState::kHeldForReplacement) << "keeps its work, takes no new work";

  // The new instance runs but its node has not registered its GPUs yet.
  const std::string new_id = s.NewId();
  ASSERT_FALSE(new_id.empty());
  s.nodes.health[new_id] = {true, /*gpus_allocatable=*/false, s.clock.WallNow()};
  for (int i = 0; i < 4; ++i) {
    TickReport r = s.TickAfter(Seconds(30));
    EXPECT_EQ(r.replacements_waiting, 1);
    EXPECT_EQ(s.fake.launches.size(), 1u) << "no second replacement";
  }
  EXPECT_TRUE(s.nodes.begun.empty());

  s.nodes.Register(new_id);
  TickReport ready = s.TickAfter(Seconds(30));
  EXPECT_EQ(ready.replacements_waiting, 0);
  ASSERT_EQ(s.nodes.begun.size(), 1u);
  EXPECT_EQ(s.nodes.begun[0].instance_id, s.old_id);
  s.nodes.EndDrain(s.old_id, DrainEnd::kDrained);
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{s.old_id});
  EXPECT_EQ(s.Find(s.old_id), nullptr);
}

TEST(Replacement, WithoutKubernetesTheRunningReplacementIsEnough) {
  ReplaceScene s(/*with_kubernetes=*/false);
  s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  EXPECT_TRUE(s.fake.terminations.empty()) << "not in the tick that launches the replacement";
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{s.old_id});
}

TEST(Replacement, AReplacementThatNeverRegistersLeavesTheOldNodeInService) {
  ReplaceScene s(/*with_kubernetes=*/true);
  s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  s.TickAfter(Seconds(16 * 60));
  EXPECT_TRUE(s.nodes.begun.empty());
  EXPECT_TRUE(std::find(s.fake.terminations.begin(), s.fake.terminations.end(),
                        std::vector<std::string>{s.old_id}) == s.fake.terminations.end());
  ASSERT_NE(s.Find(s.old_id), nullptr);
  EXPECT_NE(s.Find(s.old_id)->state, NodeState::kDraining);
}

// A rebalance recommendation for the node being replaced cordons it; when
// the replacement then fails, the node stays cordoned (not back in service).
TEST(Replacement, ARebalanceCordonOutlivesAFailedReplacement) {
  Policy p = ReplacePolicy();
  p.spot.on_rebalance = RebalanceResponse::kCordon;
  ReplaceScene s(/*with_kubernetes=*/true, p);
  s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  ASSERT_EQ(s.Find(s.old_id)->state, NodeState::kHeldForReplacement);
  s.clock.Advance(Seconds(30));
  s.fake.notices.push_back({s.old_id, s.clock.WallNow(), WallTime{}, /*rebalance=*/true});
  s.controller->Tick();
  EXPECT_EQ(s.Find(s.old_id)->state, NodeState::kCordoned);
  EXPECT_TRUE(s.nodes.cordoned.count(s.old_id) != 0 && s.nodes.cordoned[s.old_id]);
  s.TickAfter(Seconds(16 * 60));  // the replacement never registers
  ASSERT_NE(s.Find(s.old_id), nullptr);
  EXPECT_EQ(s.Find(s.old_id)->state, NodeState::kCordoned);
}

}  // namespace
}  // namespace gpuscaler
