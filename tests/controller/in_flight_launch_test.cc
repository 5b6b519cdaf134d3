// Launches the cloud accepted whose instances are not listed yet are coming
// capacity (launching placeholders), not failures planned again.
#include <gtest/gtest.h>

#include "gpuscaler/store/audit_reader.h"
#include "lifecycle_harness.h"

namespace gpuscaler {
namespace {

using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

TEST(InFlightLaunch, AGroupThatHasNotListedItsInstancesIsNotRaisedAgain) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/true));
  s.work.SetPending({GpuUnit("a"), GpuUnit("b")});
  TickReport first = s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  EXPECT_EQ(s.fake.launches[0].auto_scaling_group, "gpu-group");
  EXPECT_EQ(first.nodes_launched, 0);
  EXPECT_EQ(first.nodes_in_flight, 2);
  EXPECT_EQ(s.Count(NodeState::kLaunching), 2);
  for (const Node& n : s.controller->snapshot().nodes) EXPECT_TRUE(n.instance_id.empty()) << n.id;

  // The pods still wait; the group has not listed anything: no second raise.
  for (int i = 0; i < 5; ++i) {
    TickReport r = s.TickAfter(Seconds(30));
    EXPECT_EQ(r.nodes_requested, 0) << "tick " << i;
  }
  EXPECT_EQ(s.fake.launches.size(), 1u);

  // The instances appear: they take the placeholders' places, recorded as
  // launched by the first decision.
  s.cloud.Reveal();
  TickReport seen = s.TickAfter(Seconds(30));
  EXPECT_EQ(seen.nodes_requested, 0);
  EXPECT_EQ(s.fake.launches.size(), 1u);
  ASSERT_EQ(s.controller->snapshot().nodes.size(), 2u);
  for (const Node& n : s.controller->snapshot().nodes) {
    EXPECT_FALSE(n.instance_id.empty());
    EXPECT_EQ(n.id, n.instance_id);
  }
  EXPECT_EQ(seen.registration_failures, 0);
}

TEST(InFlightLaunch, TheLaunchRowSaysAcceptedNotFailed) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/true));
  s.work.SetPending({GpuUnit("a")});
  TickReport r = s.controller->Tick();
  Result<std::unique_ptr<AuditReader>> reader = s.store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<ActionRow>> rows = (*reader)->ActionsForDecision(r.decision_id);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].outcome, ActionOutcome::kSucceeded);
  EXPECT_NE((*rows)[0].detail.find("not listed yet"), std::string::npos) << (*rows)[0].detail;
}

TEST(InFlightLaunch, PlaceholdersAreNotBilled) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/true));
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  s.TickAfter(Seconds(3600));
  ASSERT_EQ(s.Count(NodeState::kLaunching), 1);
  EXPECT_EQ(s.controller->snapshot().month_to_date_usd, 0.0);
}

TEST(InFlightLaunch, AcceptedInstancesThatNeverComeAreGivenUpAtTheRegistrationTimeout) {
  Policy p = LifecyclePolicy(/*asg=*/true);
  p.pools[0].registration_timeout = Seconds(600);
  LifecycleScene s(p);
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  s.cloud.Lose();
  TickReport before = s.TickAfter(Seconds(570));
  EXPECT_EQ(before.registration_failures, 0);
  EXPECT_EQ(s.Count(NodeState::kLaunching), 1);
  EXPECT_EQ(s.fake.launches.size(), 1u);

  TickReport after = s.TickAfter(Seconds(60));
  EXPECT_EQ(after.registration_failures, 1);
  EXPECT_FALSE(s.controller->availability().IsAvailable(s.fake.launches[0].offerings[0].Key(), s.clock.WallNow()));
  // The work is planned again, elsewhere (the other zone).
  ASSERT_EQ(s.fake.launches.size(), 2u);
  EXPECT_NE(s.fake.launches[1].offerings[0].Key(), s.fake.launches[0].offerings[0].Key());
}

TEST(InFlightLaunch, ARestartInTheMiddleOfALaunchAwaitsItsInstancesInsteadOfLaunchingAgain) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/true));
  std::string on_demand;
  for (const Offering& o : s.catalog.Offerings({})) {
    if (o.capacity_type == CapacityType::kOnDemand && on_demand.empty()) on_demand = o.Key();
  }
  s.AddRunningNode("i-old", on_demand, {GpuUnit("busy")});
  s.work.SetPending({GpuUnit("a"), GpuUnit("b")});
  TickReport first = s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.launches.size(), 1u);
  ASSERT_EQ(first.nodes_in_flight, 2);

  s.Restart();
  for (int i = 0; i < 3; ++i) {
    TickReport r = s.TickAfter(Seconds(30));
    EXPECT_EQ(r.nodes_requested, 0) << "tick " << i << " after the restart";
  }
  EXPECT_EQ(s.fake.launches.size(), 1u);
  EXPECT_EQ(s.Count(NodeState::kLaunching), 2);
  // The node from before the launch is not one of its instances.
  ASSERT_NE(s.Find("i-old"), nullptr);

  // The group lists them: they take the placeholders' places, recorded as
  // launched by the decision from before the restart.
  s.cloud.Reveal();
  TickReport seen = s.TickAfter(Seconds(30));
  EXPECT_EQ(seen.nodes_requested, 0);
  EXPECT_EQ(s.fake.launches.size(), 1u);
  EXPECT_EQ(s.controller->snapshot().nodes.size(), 3u);
  EXPECT_EQ(s.Count(NodeState::kLaunching) + s.Count(NodeState::kReady), 3);
  Result<std::unique_ptr<AuditReader>> reader = s.store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<NodeRow>> rows = (*reader)->NodesOverlapping(WallTime{}, s.clock.WallNow() + Seconds(1));
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  int by_first_decision = 0;
  for (const NodeRow& r : *rows) by_first_decision += r.launch.decision_id == first.decision_id ? 1 : 0;
  EXPECT_EQ(by_first_decision, 2);
}

TEST(InFlightLaunch, InstancesThatCameBeforeARestartAreNotAwaitedAgain) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/true));
  s.work.SetPending({GpuUnit("a"), GpuUnit("b")});
  s.controller->Tick();
  ASSERT_EQ(s.fake.launches.size(), 1u);
  s.cloud.RevealOne();
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.controller->snapshot().nodes.size(), 2u);  // one listed, one placeholder

  s.Restart();
  TickReport r = s.TickAfter(Seconds(30));
  EXPECT_EQ(r.nodes_requested, 0);
  // One instance listed, one still awaited: not two awaited on top of it.
  EXPECT_EQ(s.controller->snapshot().nodes.size(), 2u);
  int placeholders = 0;
  for (const Node& n : s.controller->snapshot().nodes) placeholders += n.instance_id.empty() ? 1 : 0;
  EXPECT_EQ(placeholders, 1);
  s.cloud.Reveal();
  s.TickAfter(Seconds(30));
  EXPECT_EQ(s.controller->snapshot().nodes.size(), 2u);
  for (const Node& n : s.controller->snapshot().nodes) EXPECT_FALSE(n.instance_id.empty()) << n.id;
  EXPECT_EQ(s.fake.launches.size(), 1u);
}

TEST(InFlightLaunch, AfterARestartTheRegistrationTimeoutStillCountsFromTheLaunch) {
  Policy p = LifecyclePolicy(/*asg=*/true);
  p.pools[0].registration_timeout = Seconds(600);
  LifecycleScene s(p);
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  s.cloud.Lose();
  s.TickAfter(Seconds(300));
  s.Restart();
  TickReport before = s.TickAfter(Seconds(270));  // 570 s after the launch
  EXPECT_EQ(before.registration_failures, 0);
  EXPECT_EQ(before.nodes_requested, 0);
  EXPECT_EQ(s.Count(NodeState::kLaunching), 1);
  EXPECT_EQ(s.fake.launches.size(), 1u);

  TickReport after = s.TickAfter(Seconds(60));  // 630 s
  EXPECT_EQ(after.registration_failures, 1);
  EXPECT_FALSE(s.controller->availability().IsAvailable(s.fake.launches[0].offerings[0].Key(), s.clock.WallNow()));
  ASSERT_EQ(s.fake.launches.size(), 2u);
  EXPECT_NE(s.fake.launches[1].offerings[0].Key(), s.fake.launches[0].offerings[0].Key());
}

TEST(InFlightLaunch, LaunchesAcceptedLongerAgoThanTheTimeoutAreNotAwaitedAfterARestart) {
  Policy p = LifecyclePolicy(/*asg=*/true);
  p.pools[0].registration_timeout = Seconds(600);
  LifecycleScene s(p);
  s.work.SetPending({GpuUnit("a")});
  s.controller->Tick();
  s.cloud.Lose();
  s.TickAfter(Seconds(700));  // given up before the restart, relaunched elsewhere
  ASSERT_EQ(s.fake.launches.size(), 2u);
  s.Restart();
  TickReport r = s.TickAfter(Seconds(30));
  EXPECT_EQ(r.registration_failures, 0);
  // Only the second launch is awaited.
  EXPECT_EQ(s.Count(NodeState::kLaunching), 1);
  EXPECT_EQ(s.fake.launches.size(), 2u);
}

TEST(InFlightLaunch, FleetLaunchesThatReturnTheirInstancesMakeNoPlaceholders) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/false));
  s.work.SetPending({GpuUnit("a")});
  TickReport r = s.controller->Tick();
  EXPECT_EQ(r.nodes_launched, 1);
  EXPECT_EQ(r.nodes_in_flight, 0);
  ASSERT_EQ(s.controller->snapshot().nodes.size(), 1u);
  EXPECT_FALSE(s.controller->snapshot().nodes[0].instance_id.empty());
}

}  // namespace
}  // namespace gpuscaler
