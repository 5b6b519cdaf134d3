// Registration timeouts and repairs through the ClusterNodes seam.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fake_cluster_nodes.h"
#include "lifecycle_harness.h"

namespace gpuscaler {
namespace {

using testing::FakeClusterNodes;
using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

struct RepairScene : LifecycleScene {
  FakeClusterNodes nodes{clock};
  explicit RepairScene(Policy p) : LifecycleScene(std::move(p)) { controller->SetClusterNodes(&nodes); }
  std::string OnlyNode() const {
    EXPECT_EQ(controller->snapshot().nodes.size(), 1u);
    return controller->snapshot().nodes.empty() ? "" : controller->snapshot().nodes[0].instance_id;
  }
};

TEST(NodeRepair, AnInstanceThatNeverRegistersIsTerminatedAndItsWorkPlannedElsewhere) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string first = s.OnlyNode();
  const std::string first_offering = s.fake.launches[0].offerings[0].Key();

  TickReport waiting = s.TickAfter(Seconds(14 * 60));
  EXPECT_EQ(waiting.registration_failures, 0);
  EXPECT_TRUE(s.fake.terminations.empty());
  EXPECT_EQ(s.fake.launches.size(), 1u);

  TickReport given_up = s.TickAfter(Seconds(90));
  EXPECT_EQ(given_up.registration_failures, 1);
  EXPECT_FALSE(s.controller->availability().IsAvailable(first_offering, s.clock.WallNow()));
  ASSERT_EQ(s.fake.launches.size(), 2u);
  EXPECT_NE(s.fake.launches[1].offerings[0].Key(), first_offering);
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{first});
  EXPECT_TRUE(s.nodes.begun.empty()) << "a node that never registered is not drained";
  for (const Node& n : s.controller->snapshot().nodes) EXPECT_NE(n.instance_id, first);
  // Observation's note names the node; it is no governor hold.
  ASSERT_EQ(given_up.node_notes.size(), 1u);
  EXPECT_EQ(given_up.node_notes[0].rfind(first + ": registration timeout", 0), 0u) << given_up.node_notes[0];
  EXPECT_TRUE(given_up.governor.notes.empty());
  const std::vector<std::string>& plan_notes = given_up.plan.notes;
  EXPECT_NE(std::find(plan_notes.begin(), plan_notes.end(), "node: " + given_up.node_notes[0]), plan_notes.end());
}

TEST(NodeRepair, ARegisteredNodeIsKeptPastTheRegistrationTimeout) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  s.nodes.Register(s.OnlyNode());
  TickReport r = s.TickAfter(Seconds(3600));
  EXPECT_EQ(r.registration_failures, 0);
  EXPECT_TRUE(s.fake.terminations.empty());
}

TEST(NodeRepair, ANodeWithoutGpusAllocatableHasNotRegistered) {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.pools[0].registration_timeout = Seconds(300);
  RepairScene s(p);
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  s.nodes.health[s.OnlyNode()] = {true, /*gpus_allocatable=*/false, s.clock.WallNow()};
  TickReport r = s.TickAfter(Seconds(301));
  EXPECT_EQ(r.registration_failures, 1);
  EXPECT_EQ(s.fake.terminations.size(), 1u);
}

TEST(NodeRepair, ANodeFromBeforeARestartIsNotARegistrationFailure) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  s.AddRunningNode("i-old", "g5.xlarge/us-east-1a/on-demand", {GpuUnit("a")});
  s.nodes.health["i-old"] = {false, true, s.clock.WallNow()};  // NotReady right now
  TickReport r = s.TickAfter(Seconds(30));
  EXPECT_EQ(r.registration_failures, 0);
  EXPECT_TRUE(s.fake.terminations.empty());
  // Its node is gone altogether: a paid instance that is no node is given up.
  s.nodes.health.erase("i-old");
  s.AddRunningNode("i-nodeless", "g5.xlarge/us-east-1b/on-demand", {});
  TickReport nodeless = s.TickAfter(Seconds(30));
  EXPECT_EQ(nodeless.registration_failures, 1);
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{"i-nodeless"});
}

TEST(NodeRepair, ANodeStillJoiningAtARestartIsGivenUpAtTheRegistrationTimeoutFromItsLaunch) {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.pools[0].registration_timeout = Seconds(600);
  RepairScene s(p);
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string id = s.OnlyNode();
  s.nodes.health[id] = {/*ready=*/false, /*gpus_allocatable=*/false, s.clock.WallNow()};  // kubelet joining
  s.TickAfter(Seconds(300));

  s.Restart();
  s.controller->SetClusterNodes(&s.nodes);
  TickReport before = s.TickAfter(Seconds(240));  // 540 s after the launch
  EXPECT_EQ(before.registration_failures, 0);
  EXPECT_TRUE(s.fake.terminations.empty());
  TickReport after = s.TickAfter(Seconds(90));  // 630 s
  EXPECT_EQ(after.registration_failures, 1);
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{id});
}

TEST(NodeRepair, NothingIsGivenUpWhileTheClusterIsUnknown) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  s.nodes.synced = false;
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  TickReport r = s.TickAfter(Seconds(3600));
  EXPECT_EQ(r.registration_failures, 0);
  EXPECT_TRUE(s.fake.terminations.empty());
}

TEST(NodeRepair, ANodeNotReadyPastRepairAfterIsReplacedFirstThenRemoved) {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.pools[0].repair_after = Seconds(600);
  RepairScene s(p);
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string sick = s.OnlyNode();
  s.nodes.Register(sick);
  s.work.SetPending({});
  s.work.SetRunning(sick, {GpuUnit("a")});
  s.TickAfter(Seconds(30));

  s.nodes.health[sick] = {false, true, s.clock.WallNow()};
  TickReport early = s.TickAfter(Seconds(540));
  EXPECT_TRUE(s.fake.terminations.empty());
  EXPECT_EQ(s.fake.launches.size(), 1u);

  size_t terminations_at_launch = 99;
  s.fake.on_launch = [&](const LaunchRequest&) { terminations_at_launch = s.fake.terminations.size(); };
  TickReport repaired = s.TickAfter(Seconds(90));
  ASSERT_EQ(s.fake.launches.size(), 2u) << "the replacement is requested";
  EXPECT_EQ(terminations_at_launch, 0u) << "before the node is removed";
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{sick});
  EXPECT_TRUE(s.nodes.begun.empty()) << "a NotReady node is not drained (no kubelet to evict its pods)";
}

TEST(NodeRepair, RepairIsOffByDefault) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string sick = s.OnlyNode();
  s.nodes.Register(sick);
  s.work.SetPending({});
  s.work.SetRunning(sick, {GpuUnit("a")});
  s.TickAfter(Seconds(30));  // seen Ready: registered
  s.nodes.health[sick] = {false, true, s.clock.WallNow()};
  s.TickAfter(Seconds(6 * 3600));
  EXPECT_TRUE(s.fake.terminations.empty());
  EXPECT_EQ(s.fake.launches.size(), 1u);
}

}  // namespace
}  // namespace gpuscaler

namespace gpuscaler {
namespace {

TEST(NodeMilestones, LaunchToRegisteredToGpusToFirstPodPerFamily) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string id = s.OnlyNode();
  s.nodes.health[id] = {false, false, s.clock.WallNow()};
  TickReport seen = s.TickAfter(Seconds(60));
  ASSERT_EQ(seen.milestones.size(), 1u);
  EXPECT_EQ(seen.milestones[0].family, "g5");
  EXPECT_EQ(seen.milestones[0].stage, "registered");
  EXPECT_EQ(seen.milestones[0].seconds, 60);
  s.nodes.Register(id);
  TickReport ready = s.TickAfter(Seconds(30));
  ASSERT_EQ(ready.milestones.size(), 1u);
  EXPECT_EQ(ready.milestones[0].stage, "gpus_allocatable");
  EXPECT_EQ(ready.milestones[0].seconds, 90);
  s.work.SetPending({});
  s.work.SetRunning(id, {GpuUnit("a")});
  TickReport running = s.TickAfter(Seconds(30));
  ASSERT_EQ(running.milestones.size(), 1u);
  EXPECT_EQ(running.milestones[0].stage, "first_pod");
  EXPECT_EQ(running.milestones[0].seconds, 120);
  EXPECT_TRUE(s.TickAfter(Seconds(30)).milestones.empty()) << "each stage once";
}

TEST(NodeMilestones, EachFamilysWarmUpIsLearnedFromTheCatalogsLatencyTowardsWhatNodesTake) {
  RepairScene s(LifecyclePolicy(/*asg=*/false));
  const double prior = static_cast<double>(s.catalog.default_launch_latency.count());
  ASSERT_EQ(s.catalog.launch_latency.count("g5"), 0u);
  EXPECT_TRUE(s.controller->snapshot().warmup_seconds_by_family.empty());
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  const std::string first = s.OnlyNode();
  s.clock.Advance(Seconds(900));
  s.nodes.Register(first);
  s.controller->Tick();
  // A third of the way from the prior to 900 s.
  double want = prior + (900 - prior) / 3;
  EXPECT_EQ(s.controller->snapshot().warmup_seconds_by_family.at("g5"), static_cast<int>(std::lround(want)));

  s.work.SetPending({GpuUnit("a"), GpuUnit("b")});
  s.work.SetRunning(first, {GpuUnit("a")});
  s.TickAfter(Seconds(30));
  std::string second;
  for (const Node& n : s.controller->snapshot().nodes) {
    if (n.instance_id != first) second = n.instance_id;
  }
  ASSERT_FALSE(second.empty());
  s.clock.Advance(Seconds(1200));
  s.nodes.Register(second);
  s.controller->Tick();
  want += (1200 - want) / 3;
  EXPECT_EQ(s.controller->snapshot().warmup_seconds_by_family.at("g5"), static_cast<int>(std::lround(want)));
}

}  // namespace
}  // namespace gpuscaler
