// Reserved capacity in the planner: a reservation's free slots are filled
// before anything is bought, never beyond its free count, only by the pools
// that select it and only while it is open; on a Capacity Block, only work
// that ends before the block's nodes are retired.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/model/reservation.h"
#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::AddReservation;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::FindOffering;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;
using testing::Units;

int ReservedNodes(const Plan& plan, const std::string& id = "cr-0a") {
  int n = 0;
  for (const LaunchAction& l : plan.launches)
    if (l.offering.capacity_type == CapacityType::kReserved && l.offering.reservation_id == id) n += l.count;
  return n;
}

int BoughtNodes(const Plan& plan) {
  int n = 0;
  for (const LaunchAction& l : plan.launches)
    if (l.offering.capacity_type != CapacityType::kReserved) n += l.count;
  return n;
}

struct ReservedScene {
  Snapshot snapshot = BaseSnapshot();
  Policy policy = BasePolicy();
};

// Four-GPU units that must run on on-demand capacity (a reserved slot
// serves them; spot does not).
ReservedScene FourGpuWork(int units, int reserved_free, bool selected = true) {
  ReservedScene scene;
  AddReservation(scene.snapshot, "cr-0a", "g5.12xlarge", "us-east-1a", 4, reserved_free, {{"team", "ml"}});
  if (selected) scene.policy.pools[0].reservations = {{"cr-0a", {}}};
  scene.snapshot.pending = Units("u", units, OnDemandOnly(Unit("", 4, 8000, 32768)));
  return scene;
}

TEST(Reservations, FreeSlotsAreFilledBeforeAnythingIsBought) {
  ReservedScene scene = FourGpuWork(3, 4);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 3);
  EXPECT_EQ(BoughtNodes(plan), 0);
  EXPECT_TRUE(plan.unplaced.empty());
  ExpectValid(scene.snapshot, scene.policy, plan);
  // The slots are paid already: the plan adds next to nothing to the bill.
  EXPECT_LT(plan.cost_after_usd_per_hour - plan.cost_before_usd_per_hour, 0.01);
  // The decision says which reservation and why.
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_NE(plan.launches[0].reason.find("g5.12xlarge reserved us-east-1a (cr-0a)"), std::string::npos)
      << plan.launches[0].reason;
  EXPECT_NE(plan.launches[0].reason.find("free slots of reservation cr-0a (4 of 4 free), paid whether used or not"),
            std::string::npos)
      << plan.launches[0].reason;
}

TEST(Reservations, NoMoreNodesThanFreeSlotsTheRestIsBought) {
  ReservedScene scene = FourGpuWork(5, 2);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 2);
  EXPECT_EQ(BoughtNodes(plan), 3);
  for (const LaunchAction& l : plan.launches) {
    if (l.offering.capacity_type == CapacityType::kReserved) {
      EXPECT_EQ(l.offering.Key(), "g5.12xlarge/us-east-1a/reserved/cr-0a");
    }
  }
  EXPECT_TRUE(plan.unplaced.empty());
}

TEST(Reservations, WorkBeyondTheSlotsIsBoughtWhenThePoolHasOnlyTheReservedType) {
  // The slots are the cheapest way to buy the type; once they are taken,
  // the same type is still bought on-demand, in any zone.
  ReservedScene scene = FourGpuWork(3, 1);
  scene.policy.pools[0].instance_types = {"g5.12xlarge"};
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 1);
  EXPECT_EQ(BoughtNodes(plan), 2);
  EXPECT_TRUE(plan.unplaced.empty());
  ExpectValid(scene.snapshot, scene.policy, plan);
}

TEST(Reservations, AFullReservationTakesNoLaunch) {
  ReservedScene scene = FourGpuWork(2, 0);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 0);
  EXPECT_EQ(BoughtNodes(plan), 2);
}

TEST(Reservations, OnlyPoolsThatSelectTheReservationUseIt) {
  ReservedScene scene = FourGpuWork(2, 4, /*selected=*/false);
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 0);
  // By tags: every tag of the term must match.
  scene.policy.pools[0].reservations = {{"", {{"team", "ml"}, {"env", "prod"}}}};
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 0);
  scene.policy.pools[0].reservations = {{"", {{"team", "ml"}}}};
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 2);
}

TEST(Reservations, ACapacityBlockTakesLaunchesOnlyInsideItsWindow) {
  ReservedScene scene = FourGpuWork(1, 4);
  Reservation& block = scene.snapshot.reservations[0];
  block.kind = ReservationKind::kCapacityBlock;
  block.start = scene.snapshot.time + Seconds(600);  // not started yet
  block.end = scene.snapshot.time + Seconds(7 * 24 * 3600);
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 0);
  block.start = scene.snapshot.time - Seconds(600);
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 1);
  // EC2 takes a block's instances back from 30 minutes before its end.
  block.end = scene.snapshot.time + Seconds(20 * 60);
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 0);
}

TEST(Reservations, WorkOnAnOnDemandNodeMovesToAFreeSlot) {
  // A busy on-demand g5.12xlarge beside a free reserved slot of its type:
  // the slot costs nothing more, so the work moves there and the bought
  // node goes.
  ReservedScene scene = FourGpuWork(0, 1);
  scene.snapshot.nodes.push_back(MakeNode(scene.snapshot, "od", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                                          {OnDemandOnly(Unit("r0", 4, 8000, 32768))}));
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 1);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].node_id, "od");
}

TEST(Reservations, NoWorkIsMovedOntoAFullReservation) {
  ReservedScene scene = FourGpuWork(0, 0);
  scene.policy.pools[0].instance_types = {"g5.12xlarge"};
  for (const char* id : {"od-1", "od-2"})
    scene.snapshot.nodes.push_back(MakeNode(scene.snapshot, id, "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                                            {OnDemandOnly(Unit(std::string(id) + "-r", 4, 8000, 32768))}));
  Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_TRUE(plan.launches.empty());
  EXPECT_TRUE(plan.terminations.empty());
  // One free slot takes one node's work, not both.
  scene.snapshot.reservations[0].available_count = 1;
  plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 1);
  EXPECT_EQ(plan.terminations.size(), 1u);
}

TEST(Reservations, AMoveOntoASlotNeverFallsBackToADearerOffering) {
  // The move saves the on-demand node's price only on the slot: if the slot
  // is taken by the time the launch is made, buying the same type on
  // on-demand would pay for a move that saves nothing.
  ReservedScene scene = FourGpuWork(0, 1);
  scene.snapshot.nodes.push_back(MakeNode(scene.snapshot, "od", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                                          {OnDemandOnly(Unit("r0", 4, 8000, 32768))}));
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  ASSERT_EQ(ReservedNodes(plan), 1);
  for (const LaunchAction& l : plan.launches) {
    for (const Offering& f : l.fallbacks) {
      EXPECT_EQ(f.capacity_type, CapacityType::kReserved) << f.Key();
    }
  }
}

TEST(Reservations, PendingWorkFallsBackFromATakenSlotToBuying) {
  // Pending work needs a node whatever it costs: behind the slot, the same
  // type on-demand.
  ReservedScene scene = FourGpuWork(1, 1);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  ASSERT_EQ(plan.launches.size(), 1u);
  bool on_demand = false;
  for (const Offering& f : plan.launches[0].fallbacks) on_demand |= f.capacity_type == CapacityType::kOnDemand;
  EXPECT_TRUE(on_demand);
}

TEST(Reservations, ANodeOnAReservationCountsAtItsMarginalCost) {
  // A node already on the reservation adds nothing the plan could save by
  // removing it: its work is not moved to a cheaper bought node.
  ReservedScene scene = FourGpuWork(0, 0);
  const Offering reserved = scene.snapshot.offerings.back();
  Node n = MakeNode(scene.snapshot, "res", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                    {Unit("r0", 1, 2000, 8192)});
  n.offering = reserved;
  scene.snapshot.nodes.push_back(n);
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_TRUE(plan.terminations.empty());
  EXPECT_TRUE(plan.launches.empty());
  EXPECT_LT(plan.cost_before_usd_per_hour, 0.01);
}

TEST(Reservations, AnEmptyNodeOnAReservationIsKept) {
  // Its slot is paid whether it runs or not: removing it saves nothing,
  // and kept it takes the next work with no lead time.
  ReservedScene scene = FourGpuWork(0, 0);
  Node n = MakeNode(scene.snapshot, "res", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, {});
  n.offering = scene.snapshot.offerings.back();
  n.launch_time = scene.snapshot.time - Seconds(24 * 3600);
  scene.snapshot.nodes.push_back(n);
  EXPECT_TRUE(MakePlan(scene.snapshot, scene.policy).terminations.empty());
  // The same node bought on-demand goes.
  scene.snapshot.nodes.back().offering = FindOffering(scene.snapshot, "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand);
  EXPECT_EQ(MakePlan(scene.snapshot, scene.policy).terminations.size(), 1u);
}

// The block `scene`'s reservation becomes: open now, retired (Reservation::
// RetireAt) `room` after a node launched now would be up.
void BlockRetiredAfter(ReservedScene& scene, Seconds room) {
  Reservation& block = scene.snapshot.reservations[0];
  block.kind = ReservationKind::kCapacityBlock;
  const Seconds latency = scene.snapshot.offerings.back().launch_latency;
  block.end = scene.snapshot.time + latency + room + scene.policy.disruption.drain_timeout + latency + kBlockEndNotice;
  ASSERT_EQ(*block.RetireAt(latency, scene.policy.disruption.drain_timeout), scene.snapshot.time + latency + room);
}

TEST(Reservations, ACapacityBlockTakesOnlyWorkThatEndsBeforeItsNodesAreRetired) {
  ReservedScene scene = FourGpuWork(1, 4);
  DemandUnit& u = scene.snapshot.pending[0];
  u.checkpoint_interval = Seconds(0);  // all progress lost when moved
  u.expected_runtime = Seconds(4 * 3600);
  BlockRetiredAfter(scene, Seconds(4 * 3600));
  Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 1);
  ExpectValid(scene.snapshot, scene.policy, plan);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_NE(plan.launches[0].reason.find("a Capacity Block: its work ends before its nodes are retired at"),
            std::string::npos)
      << plan.launches[0].reason;
  // A second more and it would still run when the node is retired: it goes
  // elsewhere, bought.
  BlockRetiredAfter(scene, Seconds(4 * 3600 - 1));
  plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 0);
  EXPECT_EQ(BoughtNodes(plan), 1);
  EXPECT_TRUE(plan.unplaced.empty());
}

TEST(Reservations, WorkThatCheckpointsNeedsRoomOnABlockForOneIntervalOnly) {
  ReservedScene scene = FourGpuWork(1, 4);
  DemandUnit& u = scene.snapshot.pending[0];
  u.checkpoint_interval = Seconds(1800);
  u.expected_runtime = Seconds(48 * 3600);
  BlockRetiredAfter(scene, Seconds(1800));
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 1);
  BlockRetiredAfter(scene, Seconds(1799));
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 0);
  // An ODCR has no take-back: its instances run on as on-demand ones.
  scene.snapshot.reservations[0].kind = ReservationKind::kDefault;
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 1);
}

TEST(Reservations, RunningWorkMovesOntoABlockOnlyWhenItEndsBeforeTheRetirement) {
  ReservedScene scene = FourGpuWork(0, 1);
  scene.policy.pools[0].instance_types = {"g5.12xlarge"};  // the slot is the only cheaper home
  DemandUnit running = OnDemandOnly(Unit("r0", 4, 8000, 32768));
  running.checkpoint_interval = Seconds(0);
  running.expected_runtime = Seconds(10 * 3600);
  scene.snapshot.nodes.push_back(
      MakeNode(scene.snapshot, "od", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, {running}));
  BlockRetiredAfter(scene, Seconds(12 * 3600));
  EXPECT_EQ(ReservedNodes(MakePlan(scene.snapshot, scene.policy)), 1);
  BlockRetiredAfter(scene, Seconds(8 * 3600));
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(ReservedNodes(plan), 0);
  EXPECT_TRUE(plan.terminations.empty());
  EXPECT_TRUE(plan.launches.empty());
}

}  // namespace
}  // namespace gpuscaler
