// The controller and reservations: what the cloud lists reaches the
// snapshot as reservations and reserved offerings (pools[].reservations
// selecting), a launch into one is recorded as the on-demand instance it
// is, a cloud without reserved capacity is an error on every tick, and
// nodes on a Capacity Block are retired before the cloud takes them back.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/g5_fleet.h"
#include "fakes/recording_planner.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler {
namespace {

using testing::FakeClock;
using testing::FakeCloudProvider;
using testing::FakeWorkSource;

Reservation Odcr(const std::string& id, int total, int free, std::map<std::string, std::string> tags = {}) {
  Reservation r;
  r.id = id;
  r.instance_type = "g5.xlarge";
  r.region = "us-east-1";
  r.zone = "us-east-1a";
  r.total_count = total;
  r.available_count = free;
  r.tags = std::move(tags);
  return r;
}

struct ReservationScene {
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  Catalog catalog = testing::G5XlargeCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  Plan next_plan;
  std::vector<Snapshot> seen;
  std::unique_ptr<Controller> controller;

  explicit ReservationScene(bool pool_selects = true, bool reuse_plans = false) {
    Policy policy = testing::UndampedGpuPolicy();
    if (pool_selects) policy.pools[0].reservations = {{"cr-1", {}}};
    ControllerOptions o;
    o.reuse_unchanged_plans = reuse_plans;
    controller = std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, std::move(policy), o,
                                              testing::RecordingPlanner(&seen, &next_plan));
  }
  const Offering* Reserved() const {
    for (const Offering& o : controller->snapshot().offerings)
      if (o.capacity_type == CapacityType::kReserved) return &o;
    return nullptr;
  }
};

TEST(ControllerReservations, TheSelectedReservationsAndTheirOfferingsReachTheSnapshot) {
  ReservationScene scene;
  scene.cloud.reservations = {{Odcr("cr-1", 2, 1), Odcr("cr-other", 4, 4, {{"team", "web"}})}};
  const TickReport r = scene.controller->Tick();
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
  const Snapshot& s = scene.controller->snapshot();
  ASSERT_EQ(s.reservations.size(), 1u) << "only what a pool selects";
  EXPECT_EQ(s.reservations[0].id, "cr-1");
  EXPECT_EQ(s.reservations[0].available_count, 1);
  const Offering* reserved = scene.Reserved();
  ASSERT_NE(reserved, nullptr);
  EXPECT_EQ(reserved->Key(), "g5.xlarge/us-east-1a/reserved/cr-1");
  EXPECT_DOUBLE_EQ(reserved->on_demand_usd_per_hour, 1.0);
  EXPECT_DOUBLE_EQ(reserved->usd_per_hour, 1.0) << "an ODCR stating no cost is billed at on-demand";
  ASSERT_FALSE(scene.seen.empty());
  EXPECT_EQ(scene.seen.back().reservations.size(), 1u) << "the planner sees them";

  // The cloud's count moves: the next snapshot has it.
  scene.cloud.reservations = {{Odcr("cr-1", 2, 0)}};
  scene.clock.Advance(Seconds(30));
  scene.controller->Tick();
  EXPECT_EQ(scene.controller->snapshot().reservations[0].available_count, 0);
}

// A Capacity Block listed the same before and after its start: the tick at
// its start plans again (its slots take launches from then on), and so does
// the one at its last half hour, though nothing else changed.
TEST(ControllerReservations, AReservationOpeningOrClosingIsNewsForThePlan) {
  ReservationScene scene(true, /*reuse_plans=*/true);
  Reservation block = Odcr("cr-1", 2, 2);
  block.kind = ReservationKind::kCapacityBlock;
  block.start = scene.clock.WallNow() + Seconds(90);
  block.end = block.start + Seconds(3600);
  scene.cloud.reservations = {{block}};
  scene.controller->Tick();
  const size_t planned = scene.seen.size();
  ASSERT_GE(planned, 1u);
  scene.clock.Advance(Seconds(30));
  scene.controller->Tick();
  ASSERT_EQ(scene.seen.size(), planned) << "nothing changed: the plan is reused";
  scene.clock.Advance(Seconds(60));  // the block's start
  scene.controller->Tick();
  ASSERT_EQ(scene.seen.size(), planned + 1) << "the block opened";
  EXPECT_TRUE(scene.seen.back().reservations[0].OpenAt(scene.seen.back().time));
  scene.clock.Advance(Seconds(30));
  scene.controller->Tick();
  EXPECT_EQ(scene.seen.size(), planned + 1);
  scene.clock.AdvanceTo(*block.end - kBlockEndNotice);
  scene.controller->Tick();
  EXPECT_EQ(scene.seen.size(), planned + 2) << "the block closed to launches";
}

TEST(ControllerReservations, ALaunchIntoASlotIsRecordedAsTheOnDemandInstanceItIs) {
  ReservationScene scene;
  scene.cloud.reservations = {{Odcr("cr-1", 2, 2)}};
  scene.controller->Tick();
  ASSERT_NE(scene.Reserved(), nullptr);
  LaunchAction l;
  l.pool = "gpu";
  l.offering = *scene.Reserved();
  l.count = 1;
  l.reason = "test";
  scene.next_plan.launches = {l};
  scene.clock.Advance(Seconds(30));
  const TickReport r = scene.controller->Tick();
  ASSERT_EQ(r.nodes_launched, 1);
  ASSERT_EQ(scene.cloud.launches.size(), 1u);
  EXPECT_EQ(scene.cloud.launches[0].offerings[0].reservation_id, "cr-1") << "the cloud is asked for the slot";
  std::unique_ptr<AuditReader> reader = std::move(scene.store->OpenReader()).value();
  const std::vector<ActionRow> actions = std::move(reader->ActionsForDecision(r.decision_id)).value();
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].action.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(actions[0].action.offering.instance_type, "g5.xlarge");
}

TEST(ControllerReservations, ACloudWithoutReservedCapacityIsAnErrorOnEveryTick) {
  ReservationScene scene;  // the fake lists no reservations: it has none to list
  for (int tick = 0; tick < 2; ++tick) {
    const TickReport r = scene.controller->Tick();
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_NE(r.errors[0].ToString().find("capacity reservations"), std::string::npos) << r.errors[0].ToString();
    EXPECT_NE(r.errors[0].ToString().find("remove pools[].reservations"), std::string::npos);
    scene.clock.Advance(Seconds(30));
  }
  // A policy that selects none never asks.
  ReservationScene without(/*pool_selects=*/false);
  EXPECT_TRUE(without.controller->Tick().errors.empty());
}

TEST(ControllerReservations, AnInstanceListedOnAReservationCostsWhatItsSlotDoes) {
  // EC2 lists an instance in a reservation without a price: after a
  // restart the node is priced as the reservation's offering.
  ReservationScene scene;
  scene.cloud.reservations = {{Odcr("cr-1", 2, 1)}};
  Instance listed;
  listed.instance_id = "i-0reserved";
  listed.pool = "gpu";
  listed.offering = ReservedOffering(Odcr("cr-1", 2, 1), nullptr);
  listed.offering.region = "us-east-1";
  ASSERT_EQ(listed.offering.usd_per_hour, 0);
  listed.launch_time = scene.clock.WallNow() - Seconds(3600);
  scene.cloud.instances[listed.instance_id] = listed;
  scene.controller->Tick();
  ASSERT_NE(scene.Reserved(), nullptr);
  ASSERT_GT(scene.Reserved()->usd_per_hour, 0);
  ASSERT_EQ(scene.controller->snapshot().nodes.size(), 1u);
  const Offering& priced = scene.controller->snapshot().nodes[0].offering;
  EXPECT_DOUBLE_EQ(priced.usd_per_hour, scene.Reserved()->usd_per_hour);
  EXPECT_DOUBLE_EQ(priced.on_demand_usd_per_hour, scene.Reserved()->on_demand_usd_per_hour);
}

bool Terminated(const FakeCloudProvider& cloud, const std::string& id) {
  for (const std::vector<std::string>& call : cloud.terminations)
    if (std::find(call.begin(), call.end(), id) != call.end()) return true;
  return false;
}

TEST(ControllerReservations, NodesOnACapacityBlockAreRetiredBeforeTheCloudTakesThemBack) {
  ReservationScene scene;
  Reservation block = Odcr("cr-1", 2, 2);
  block.kind = ReservationKind::kCapacityBlock;
  block.start = scene.clock.WallNow() - Seconds(3600);
  block.end = scene.clock.WallNow() + Seconds(3 * 3600);
  scene.cloud.reservations = {{block}};
  scene.controller->Tick();
  ASSERT_NE(scene.Reserved(), nullptr);
  // One node on the block, one more of the pool still launching.
  LaunchAction on_block;
  on_block.pool = "gpu";
  on_block.offering = *scene.Reserved();
  on_block.count = 1;
  on_block.reason = "test";
  LaunchAction bought = on_block;
  bought.offering = ReservedOffering(block, nullptr);
  bought.offering.capacity_type = CapacityType::kOnDemand;
  bought.offering.reservation_id.clear();
  scene.next_plan.launches = {on_block, bought};
  scene.clock.Advance(Seconds(30));
  ASSERT_EQ(scene.controller->Tick().nodes_launched, 2);
  scene.next_plan = Plan{};
  std::string on_block_id, launching_id;
  for (auto& [id, inst] : scene.cloud.instances) {
    if (inst.offering.capacity_type == CapacityType::kReserved) {
      on_block_id = id;
    } else {
      launching_id = id;
      inst.state = InstanceState::kPending;
    }
  }
  DemandUnit running;
  running.id = "job-0";
  running.gpus = 1;
  scene.work.SetRunning(on_block_id, {running});
  const Seconds drain_timeout = Policy{}.disruption.drain_timeout;
  const WallTime retire = *block.RetireAt(scene.Reserved()->launch_latency, drain_timeout);

  auto state_of = [&](const std::string& id) {
    for (const Node& n : scene.controller->snapshot().nodes)
      if (n.instance_id == id) return n.state;
    return NodeState::kTerminating;
  };
  scene.clock.AdvanceTo(retire - Seconds(60));
  scene.controller->Tick();
  EXPECT_EQ(state_of(on_block_id), NodeState::kReady) << "in service until its retirement";
  scene.clock.AdvanceTo(retire);
  TickReport r = scene.controller->Tick();
  EXPECT_EQ(state_of(on_block_id), NodeState::kCordoned);
  ASSERT_FALSE(r.node_notes.empty());
  EXPECT_NE(r.node_notes[0].find("capacity block cr-1 is taken back at"), std::string::npos) << r.node_notes[0];
  // Its work is replacement demand from the tick of its retirement.
  bool replaced = false;
  for (const DemandUnit& u : scene.seen.back().pending) replaced |= u.id == "job-0@replace";
  EXPECT_TRUE(replaced);
  // While a node of its pool is still launching (its replacement, for all
  // the controller knows), it stays...
  scene.clock.Advance(Seconds(60));
  scene.controller->Tick();
  EXPECT_FALSE(Terminated(scene.cloud, on_block_id));
  // ...but never past a drain timeout before the take-back.
  scene.clock.AdvanceTo(*block.TakeBackAt() - drain_timeout);
  scene.controller->Tick();
  EXPECT_TRUE(Terminated(scene.cloud, on_block_id));
  EXPECT_FALSE(Terminated(scene.cloud, launching_id));
}

TEST(ControllerReservations, ARetiredBlockNodeGoesOnceNothingOfItsPoolIsLaunching) {
  ReservationScene scene;
  Reservation block = Odcr("cr-1", 1, 1);
  block.kind = ReservationKind::kCapacityBlock;
  block.start = scene.clock.WallNow() - Seconds(3600);
  block.end = scene.clock.WallNow() + Seconds(3 * 3600);
  scene.cloud.reservations = {{block}};
  scene.controller->Tick();
  ASSERT_NE(scene.Reserved(), nullptr);
  LaunchAction on_block;
  on_block.pool = "gpu";
  on_block.offering = *scene.Reserved();
  on_block.count = 1;
  on_block.reason = "test";
  scene.next_plan.launches = {on_block};
  scene.clock.Advance(Seconds(30));
  ASSERT_EQ(scene.controller->Tick().nodes_launched, 1);
  scene.next_plan = Plan{};
  const std::string id = scene.cloud.instances.begin()->first;
  const WallTime retire = *block.RetireAt(scene.Reserved()->launch_latency, Policy{}.disruption.drain_timeout);
  scene.clock.AdvanceTo(retire);
  scene.controller->Tick();  // retired: its replacement is planned this tick
  EXPECT_FALSE(Terminated(scene.cloud, id));
  scene.clock.Advance(Seconds(60));
  scene.controller->Tick();  // nothing of the pool launching: the replacement has come
  EXPECT_TRUE(Terminated(scene.cloud, id));
  EXPECT_LT(scene.clock.WallNow(), *block.TakeBackAt() - Policy{}.disruption.drain_timeout);
}

}  // namespace
}  // namespace gpuscaler
