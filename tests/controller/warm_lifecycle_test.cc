// Warm capacity through the controller with Kubernetes (ClusterNodes): a
// refill is cordoned when its node registers and stopped once Ready; an
// empty node parked into warm capacity is drained first and stopped (not
// terminated) when the drain ends well, kept when it does not; pending work
// starts a stopped node, which is returned to service once Ready.
#include <gtest/gtest.h>

#include "fake_cluster_nodes.h"
#include "lifecycle_harness.h"

namespace gpuscaler::warm_lifecycle_test {
namespace {

using testing::FakeClusterNodes;
using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

Policy WarmPolicy(int size) {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.disruption.consolidation = true;
  p.disruption.min_node_age = Seconds(0);
  p.pools[0].warm = WarmPoolPolicy{};
  p.pools[0].warm->size = size;
  return p;
}

struct WarmScene : LifecycleScene {
  FakeClusterNodes nodes{clock};
  explicit WarmScene(Policy p) : LifecycleScene(std::move(p)) { controller->SetClusterNodes(&nodes); }
  std::vector<WarmNode> Warm() const { return controller->snapshot().warm_nodes; }
};

TEST(WarmLifecycle, ARefillIsCordonedWhenItRegistersAndStoppedOnceReady) {
  WarmScene s(WarmPolicy(1));
  s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  EXPECT_EQ(s.fake.launches[0].tags.at(kWarmTag), "refill");
  ASSERT_EQ(s.Warm().size(), 1u);
  const std::string id = s.Warm()[0].instance_id;
  EXPECT_FALSE(s.Warm()[0].stopped);
  EXPECT_TRUE(s.controller->snapshot().nodes.empty()) << "a refill is no node: it takes no work";
  // Registered, not Ready yet: cordoned, not stopped.
  s.nodes.health[id] = {false, false, s.clock.WallNow()};
  s.TickAfter(Seconds(30));
  EXPECT_TRUE(s.nodes.cordoned[id]);
  EXPECT_TRUE(s.fake.stops.empty());
  s.nodes.Register(id);
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.stops.size(), 1u);
  EXPECT_EQ(s.fake.stops[0], std::vector<std::string>{id});
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.Warm().size(), 1u);
  EXPECT_TRUE(s.Warm()[0].stopped);
  EXPECT_EQ(s.fake.launches.size(), 1u) << "nothing else launched";

  // Pending work starts it (no launch), and it returns to service once Ready.
  s.nodes.cordoned.clear();
  s.work.SetPending({GpuUnit("u")});
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.starts.size(), 1u);
  EXPECT_EQ(s.fake.starts[0], std::vector<std::string>{id});
  ASSERT_NE(s.Find(id), nullptr);
  s.TickAfter(Seconds(30));
  EXPECT_FALSE(s.nodes.cordoned.at(id)) << "uncordoned once Ready";
  s.TickAfter(Seconds(30));
  // Its minute to Ready is no cold launch's warm-up: nothing learned from it.
  EXPECT_TRUE(s.controller->snapshot().warmup_seconds_by_family.empty());
}

TEST(WarmLifecycle, AParkedNodeIsDrainedFirstAndStoppedOnlyWhenTheDrainEndsWell) {
  // A node for work that then ends; warm capacity wanted only afterwards.
  WarmScene s(WarmPolicy(0));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  ASSERT_EQ(s.controller->snapshot().nodes.size(), 1u);
  const std::string node = s.controller->snapshot().nodes[0].instance_id;
  s.nodes.Register(node);
  s.work.SetPending({});
  s.controller->SetPolicy(WarmPolicy(1));
  TickReport park = s.TickAfter(Seconds(30));
  ASSERT_EQ(park.drains_started, 1);
  ASSERT_EQ(s.nodes.begun.size(), 1u);
  EXPECT_EQ(s.nodes.begun[0].cause, "parked");
  EXPECT_TRUE(s.fake.stops.empty()) << "not before the drain has ended";
  EXPECT_TRUE(s.fake.terminations.empty());
  s.nodes.EndDrain(node, DrainEnd::kDrained);
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.stops.size(), 1u);
  EXPECT_EQ(s.fake.stops[0], std::vector<std::string>{node});
  EXPECT_TRUE(s.fake.terminations.empty()) << "stopped, not terminated";
  EXPECT_EQ(s.Find(node), nullptr);
  ASSERT_EQ(s.Warm().size(), 1u);
  EXPECT_EQ(s.Warm()[0].instance_id, node);
  EXPECT_EQ(s.fake.launches.size(), 1u) << "the park filled the warm capacity: no refill";
}

TEST(WarmLifecycle, AParkWhoseDrainTimesOutKeepsTheNode) {
  WarmScene s(WarmPolicy(0));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string node = s.controller->snapshot().nodes.at(0).instance_id;
  s.nodes.Register(node);
  s.work.SetPending({});
  s.controller->SetPolicy(WarmPolicy(1));
  ASSERT_EQ(s.TickAfter(Seconds(30)).drains_started, 1);
  s.nodes.EndDrain(node, DrainEnd::kTimedOut, 0);
  s.work.SetPending({GpuUnit("b")});
  s.TickAfter(Seconds(30));
  EXPECT_TRUE(s.fake.stops.empty());
  ASSERT_NE(s.Find(node), nullptr);
  EXPECT_EQ(s.Find(node)->state, NodeState::kReady);
}

TEST(WarmLifecycle, AnAutoScalingGroupPoolGetsItsWarmPoolSizeOnlyWhenItChanges) {
  Policy p = WarmPolicy(2);
  p.pools[0].actuation = Actuation::kAsg;
  p.pools[0].auto_scaling_group = "gpu-group";
  p.pools[0].warm->state = WarmState::kHibernated;
  WarmScene s(p);
  s.controller->Tick();
  ASSERT_EQ(s.fake.warm_pools.size(), 1u);
  EXPECT_EQ(s.fake.warm_pools[0].group, "gpu-group");
  EXPECT_EQ(s.fake.warm_pools[0].size, 2);
  EXPECT_EQ(s.fake.warm_pools[0].state, WarmState::kHibernated);
  EXPECT_TRUE(s.fake.launches.empty()) << "the group fills its own warm pool";
  s.TickAfter(Seconds(30));
  EXPECT_EQ(s.fake.warm_pools.size(), 1u) << "unchanged: not sent again";
  p.pools[0].warm->size = 3;
  s.controller->SetPolicy(p);
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.warm_pools.size(), 2u);
  EXPECT_EQ(s.fake.warm_pools[1].size, 3);
}

}  // namespace
}  // namespace gpuscaler::warm_lifecycle_test
