// The controller's launches: what the plan asks for and the snapshots it
// leaves, node labels, gangs and placement groups, capacity errors and their
// fallbacks in order, and fallbacks held back by a hard global or team budget.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "controller_harness.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::controller_launch_test {
namespace {

using Harness = testing::ControllerHarness;
using testing::Find;
using testing::TestPolicy;

// The snapshot is a value: one kept from a tick stays as it was while later
// ticks observe new work and act, and the next tick's is another value.
TEST(Controller, TwoTicksSnapshotsAreIndependentValues) {
  Harness h;
  DemandUnit first_unit = testing::GpuUnit("u-1");
  h.work.SetPending({first_unit});
  h.controller->Tick();
  const std::shared_ptr<const Snapshot> first = h.controller->SharedSnapshot();
  const std::string first_json = FormatSnapshotJsonLine(*first);
  ASSERT_EQ(first->pending.size(), 1u);
  ASSERT_TRUE(first->nodes.empty());

  h.clock.Advance(Seconds(30));
  h.work.SetPending({first_unit, testing::GpuUnit("u-2")});
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
  h.controller->Tick();
  const std::shared_ptr<const Snapshot> second = h.controller->SharedSnapshot();

  EXPECT_NE(first.get(), second.get());
  EXPECT_EQ(FormatSnapshotJsonLine(*first), first_json) << "a later tick changed a snapshot someone kept";
  EXPECT_EQ(second->pending.size(), 2u);
  EXPECT_EQ(second->nodes.size(), 2u);
  EXPECT_GT(second->time, first->time);
}

TEST(Controller, LaunchesWhatThePlanAsksForAndTracksTheNodes) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
  TickReport r = h.controller->Tick();
  EXPECT_TRUE(r.planned);
  EXPECT_EQ(r.nodes_launched, 2);
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].tags.at(kOwnerTag), "gpu");
  EXPECT_EQ(h.controller->snapshot().nodes.size(), 2u);
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
}

// A launch's node_labels go on the new instances as tags (beside, never
// over, the owner and intent tags), and so on the nodes of the next
// snapshot: how the simulator's baselines give a node its capacity-spread
// domain.
TEST(Controller, ALaunchsNodeLabelsAreOnItsNewNodes) {
  Harness h;
  LaunchAction l = h.Launch("g5.xlarge/us-east-1a/spot", 1);
  l.node_labels = {{"capacity-spread/inference", "3"}, {kOwnerTag, "not-the-pool"}};
  h.next_plan.launches = {l};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].tags.at("capacity-spread/inference"), "3");
  EXPECT_EQ(h.cloud.launches[0].tags.at(kOwnerTag), "gpu");
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 1u);
  EXPECT_EQ(h.controller->snapshot().nodes[0].labels.at("capacity-spread/inference"), "3");
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
}

TEST(Controller, AGangsLaunchAsksTheCloudForAllOrNothing) {
  Harness h;
  LaunchAction gang = h.Launch("g5.xlarge/us-east-1a/spot", 2);
  gang.all_or_nothing = true;
  h.next_plan.launches = {gang, h.Launch("g5.xlarge/us-east-1b/spot", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 2u);
  EXPECT_TRUE(h.cloud.launches[0].all_or_nothing);
  EXPECT_FALSE(h.cloud.launches[1].all_or_nothing);
}

// pools[].placement_group goes with a gang's launch only: a lone node is
// not held to one placement group's zone and capacity.
TEST(Controller, OnlyAGangsLaunchNamesThePoolsPlacementGroup) {
  Policy policy = TestPolicy();
  policy.pools[0].placement_group = "train-gangs";
  Harness h(policy);
  LaunchAction gang = h.Launch("g5.xlarge/us-east-1a/spot", 2);
  gang.all_or_nothing = true;
  h.next_plan.launches = {gang, h.Launch("g5.xlarge/us-east-1b/spot", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 2u);
  EXPECT_EQ(h.cloud.launches[0].placement_group, "train-gangs");
  EXPECT_EQ(h.cloud.launches[1].placement_group, "");
  // The snapshot's nodes say which run in the group (the planner keeps the
  // pool's next gangs in their zone).
  std::map<std::string, int> in_group;
  for (const Node& n : h.controller->snapshot().nodes) ++in_group[n.placement_group];
  EXPECT_EQ(in_group, (std::map<std::string, int>{{"", 1}, {"train-gangs", 2}}));
}

TEST(Controller, CapacityErrorFallsBackInOrderAndMarksTheOfferingUnavailable) {
  Harness h;
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1,
                                   {"g5.xlarge/us-east-1b/spot", "g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  ASSERT_EQ(h.cloud.launches[0].offerings.size(), 3u);
  EXPECT_EQ(h.cloud.launches[0].offerings[0].Key(), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(h.cloud.launches[0].offerings[1].Key(), "g5.xlarge/us-east-1b/spot");
  EXPECT_EQ(r.capacity_errors, 1);
  EXPECT_EQ(r.nodes_launched, 1);
  EXPECT_EQ(h.controller->snapshot().nodes[0].offering.zone, "us-east-1b");

  h.clock.Advance(Seconds(60));
  h.controller->Tick();
  EXPECT_FALSE(Find(h.seen.back(), "g5.xlarge/us-east-1a/spot").available);
  EXPECT_TRUE(Find(h.seen.back(), "g5.xlarge/us-east-1b/spot").available);
  // The mark expires (first error: the base back-off of 3 minutes).
  h.clock.Advance(Seconds(180));
  h.controller->Tick();
  EXPECT_TRUE(Find(h.seen.back(), "g5.xlarge/us-east-1a/spot").available);
}

TEST(Controller, UnavailableOfferingsAreLeftOutOfLaterLaunches) {
  Harness h;
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1, {"g5.xlarge/us-east-1b/spot"})};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1, {"g5.xlarge/us-east-1b/spot"})};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 2u);
  ASSERT_EQ(h.cloud.launches[1].offerings.size(), 1u);
  EXPECT_EQ(h.cloud.launches[1].offerings[0].Key(), "g5.xlarge/us-east-1b/spot");
}

TEST(Controller, NoOnDemandFallbackWhenThePolicyForbidsIt) {
  Policy p = TestPolicy();
  p.spot.fallback_to_on_demand = false;
  Harness h(p);
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1, {"g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings.size(), 1u);
  EXPECT_EQ(r.nodes_launched, 0);
}

Policy HardBudgetPolicy(double hourly_usd) {
  Policy p = TestPolicy();
  p.budget.global.hourly_usd = hourly_usd;
  p.budget.global.hard = true;
  return p;
}

Result<std::vector<ActionRow>> ActionsOf(const Harness& h, int64_t decision_id) {
  Result<std::unique_ptr<AuditReader>> reader = h.store->OpenReader();
  if (!reader) return reader.error();
  return (*reader)->ActionsForDecision(decision_id);
}

// Spot $0.40/h, on-demand $1.00/h, a hard cap of $1.00/h: two spot nodes fit,
// two on-demand nodes would not.
TEST(Controller, AFallbackThatWouldBreakAHardBudgetIsNotSent) {
  Harness h(HardBudgetPolicy(1.0));
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2, {"g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  ASSERT_EQ(h.cloud.launches[0].offerings.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings[0].Key(), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(r.nodes_launched, 0);
  EXPECT_TRUE(h.controller->snapshot().nodes.empty());
  bool noted = false;
  for (const std::string& n : r.governor.notes) noted |= n.find("would exceed the hard global budget") != std::string::npos;
  EXPECT_TRUE(noted);
  Result<std::vector<ActionRow>> actions = ActionsOf(h, r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_NE((*actions)[0].action.reason.find("not sent: 2 x g5.xlarge/us-east-1a/on-demand ($2.00/h)"),
            std::string::npos)
      << (*actions)[0].action.reason;
}

TEST(Controller, WithinTheHardBudgetTheFallbackIsSentAndTheRowNamesWhatWasBought) {
  Harness h(HardBudgetPolicy(2.5));
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2, {"g5.xlarge/us-east-1a/on-demand"})};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings.size(), 2u);
  EXPECT_EQ(r.nodes_launched, 2);
  Result<std::vector<ActionRow>> actions = ActionsOf(h, r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_EQ((*actions)[0].action.offering.Key(), "g5.xlarge/us-east-1a/spot");  // the intent
  EXPECT_NE((*actions)[0].detail.find("launched 2 x g5.xlarge/us-east-1a/on-demand"), std::string::npos)
      << (*actions)[0].detail;
}

// Nodes running count against the cap: with $0.80/h running under a $1.00/h
// cap, even the spot offering does not fit; nothing is sent and the row says why.
TEST(Controller, ALaunchNoOfferingOfWhichFitsTheHardBudgetIsRecordedAndNeverSent) {
  Harness h(HardBudgetPolicy(1.0));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 2)};
  h.controller->Tick();
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 2u);
  h.clock.Advance(Seconds(60));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1b/spot", 1, {"g5.xlarge/us-east-1b/on-demand"})};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(h.cloud.launches.size(), 1u);  // the first tick's only
  Result<std::vector<ActionRow>> actions = ActionsOf(h, r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_EQ((*actions)[0].outcome, ActionOutcome::kFailed);
  EXPECT_NE((*actions)[0].detail.find("would exceed the hard global budget ($0.20/h left of $1.00/h)"),
            std::string::npos)
      << (*actions)[0].detail;
}

// budget.teams: the team's share of what a fallback buys counts against its
// cap. Two 1-GPU units of team ml: spot ($0.80/h) fits its $1.00/h cap,
// the on-demand fallback ($2.00/h) does not, and the global cap is unset.
TEST(Controller, AFallbackThatWouldBreakATeamsHardBudgetIsNotSent) {
  Policy p = TestPolicy();
  p.classes[0].team = "ml";
  p.budget.per_team["ml"].hourly_usd = 1.0;
  Harness h(p);
  DemandUnit unit;
  unit.workload_class = "batch";
  unit.gpus = 1;
  unit.id = "u1";
  DemandUnit other = unit;
  other.id = "u2";
  h.work.SetPending({unit, other});
  h.cloud.no_capacity = {"g5.xlarge/us-east-1a/spot"};
  LaunchAction launch = h.Launch("g5.xlarge/us-east-1a/spot", 2, {"g5.xlarge/us-east-1a/on-demand"});
  launch.unit_ids = {"u1", "u2"};
  h.next_plan.launches = {launch};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(h.cloud.launches.size(), 1u);
  ASSERT_EQ(h.cloud.launches[0].offerings.size(), 1u);
  EXPECT_EQ(h.cloud.launches[0].offerings[0].Key(), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(r.nodes_launched, 0);
  bool noted = false;
  for (const std::string& n : r.governor.notes)
    noted |= n.find("would exceed the hard team ml budget ($1.00/h left of $1.00/h)") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace gpuscaler::controller_launch_test
