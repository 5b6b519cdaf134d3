// Spot interruption notices and rebalance recommendations, with Kubernetes.
#include <gtest/gtest.h>

#include "fake_cluster_nodes.h"
#include "lifecycle_harness.h"

namespace gpuscaler {
namespace {

using testing::FakeClusterNodes;
using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

Policy SpotPolicy(RebalanceResponse on_rebalance = RebalanceResponse::kIgnore) {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.pools[0].capacity_types = {CapacityType::kSpot};
  p.spot.on_rebalance = on_rebalance;
  return p;
}

// A registered spot node running one unit.
struct SpotScene : LifecycleScene {
  FakeClusterNodes nodes{clock};
  const std::string id = "i-spot";
  explicit SpotScene(Policy p) : LifecycleScene(std::move(p)) {
    controller->SetClusterNodes(&nodes);
    AddRunningNode(id, "g5.xlarge/us-east-1a/spot", {GpuUnit("a")});
    nodes.Register(id);
    controller->Tick();
  }
};

TEST(Interruption, TheNoticedNodeIsDrainedAtOnceAndReplacedInTheSameTick) {
  SpotScene s(SpotPolicy());
  s.clock.Advance(Seconds(30));
  s.fake.notices.push_back({s.id, s.clock.WallNow(), s.clock.WallNow() + Seconds(120)});
  TickReport r = s.controller->Tick();
  EXPECT_EQ(r.interruption_notices, 1);
  ASSERT_EQ(s.nodes.begun.size(), 1u);
  EXPECT_EQ(s.nodes.begun[0].instance_id, s.id);
  EXPECT_EQ(s.nodes.begun[0].timeout, Seconds(120));
  EXPECT_EQ(s.nodes.begun[0].cause, "interrupted");
  EXPECT_EQ(s.fake.launches.size(), 1u) << "replacement capacity in the same tick";
  EXPECT_EQ(s.Find(s.id)->state, NodeState::kDraining);

  s.nodes.EndDrain(s.id, DrainEnd::kDrained);
  TickReport after = s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{s.id});
  EXPECT_EQ(s.Find(s.id), nullptr);
  EXPECT_EQ(after.nodes_launched, 0) << "its replacement is already there";
}

TEST(Rebalance, OnRebalanceDecidesWhatARecommendationDoes) {
  struct Case {
    RebalanceResponse on_rebalance;
    bool cordoned;
    size_t launches;
  };
  for (const Case& c : std::vector<Case>{{RebalanceResponse::kIgnore, false, 0}, {RebalanceResponse::kCordon, true, 0}, {RebalanceResponse::kReplace, true, 1}}) {
    SCOPED_TRACE(std::string(ToString(c.on_rebalance)));
    SpotScene s(SpotPolicy(c.on_rebalance));
    s.clock.Advance(Seconds(30));
    s.fake.notices.push_back({s.id, s.clock.WallNow(), WallTime{}, /*rebalance=*/true});
    TickReport r = s.controller->Tick();
    EXPECT_EQ(r.rebalance_recommendations, 1);
    EXPECT_EQ(r.interruption_notices, 0);
    EXPECT_EQ(s.nodes.cordoned.count(s.id) != 0 && s.nodes.cordoned[s.id], c.cordoned);
    EXPECT_EQ(s.Find(s.id)->state, c.cordoned ? NodeState::kCordoned : NodeState::kReady);
    EXPECT_EQ(s.fake.launches.size(), c.launches);
    EXPECT_TRUE(s.nodes.begun.empty()) << "nothing is drained in the tick of the recommendation";
    EXPECT_TRUE(s.fake.terminations.empty());
  }
}

TEST(Rebalance, ReplaceDrainsTheNodeOnceItsReplacementHasCome) {
  SpotScene s(SpotPolicy(RebalanceResponse::kReplace));
  s.clock.Advance(Seconds(30));
  s.fake.notices.push_back({s.id, s.clock.WallNow(), WallTime{}, /*rebalance=*/true});
  s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  s.TickAfter(Seconds(30));  // the replacement (the fake's instances run at once) has come
  ASSERT_EQ(s.nodes.begun.size(), 1u);
  EXPECT_EQ(s.nodes.begun[0].instance_id, s.id);
  s.nodes.EndDrain(s.id, DrainEnd::kDrained);
  s.TickAfter(Seconds(30));
  EXPECT_EQ(s.Find(s.id), nullptr);
  EXPECT_EQ(s.fake.launches.size(), 1u);
}

}  // namespace
}  // namespace gpuscaler
