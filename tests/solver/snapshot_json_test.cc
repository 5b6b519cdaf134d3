// The snapshot inputs the planner budgets and places by survive a snapshot
// file, so `gpuscaler explain` replays a decision with them.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/model/json.h"

namespace gpuscaler {
namespace {

TEST(SnapshotJson, CarriesPerPoolSpendAndSpotPausedClasses) {
  Snapshot s;
  s.month_to_date_usd = 1500.25;
  s.month_to_date_usd_by_pool = {{"serve", 1000.25}, {"train", 500}};
  s.spot_paused_classes = {"online"};
  s.spot_budget_spent_classes = {"training"};
  const std::string text = FormatSnapshotJson(s);
  Result<Snapshot> back = ParseSnapshotJson(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->month_to_date_usd_by_pool, s.month_to_date_usd_by_pool);
  EXPECT_EQ(back->spot_paused_classes, s.spot_paused_classes);
  EXPECT_EQ(back->spot_budget_spent_classes, s.spot_budget_spent_classes);
  EXPECT_EQ(FormatSnapshotJson(*back), text);
}

TEST(SnapshotJson, CarriesReservationsAndTheirReservedOfferings) {
  Snapshot s;
  s.time = FromUnixSeconds(1780000000);
  Reservation r;
  r.id = "cb-0a";
  r.instance_type = "p5.48xlarge";
  r.region = "us-east-1";
  r.zone = "us-east-1a";
  r.kind = ReservationKind::kCapacityBlock;
  r.total_count = 4;
  r.available_count = 3;
  r.start = s.time;
  r.end = s.time + Seconds(7 * 86400);
  r.tags = {{"team", "ml"}};
  r.usd_per_hour = 31.46;
  r.upfront_usd = 21141.12;
  s.reservations = {r};
  s.offerings = {ReservedOffering(r, nullptr)};
  const std::string text = FormatSnapshotJson(s);
  Result<Snapshot> back = ParseSnapshotJson(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->reservations.size(), 1u);
  EXPECT_EQ(back->reservations[0], r);
  EXPECT_EQ(back->offerings[0].Key(), "p5.48xlarge/us-east-1a/reserved/cb-0a");
  EXPECT_EQ(FormatSnapshotJson(*back), text);
}

TEST(SnapshotJson, AReservedOfferingNamesItsReservationAndNoOtherDoes) {
  const struct {
    const char* offering;
    const char* problem;
  } cases[] = {
      {R"({"instance_type": "p5.48xlarge", "zone": "us-east-1a", "capacity_type": "reserved"})",
       "offerings[0].reservation_id: a reserved offering names its reservation"},
      {R"({"instance_type": "p5.48xlarge", "zone": "us-east-1a", "capacity_type": "spot", "reservation_id": "cr-1"})",
       "offerings[0].reservation_id: only a reserved offering names a reservation"},
  };
  for (const auto& c : cases) {
    Result<Snapshot> parsed = ParseSnapshotJson(std::string(R"({"offerings": [)") + c.offering + "]}", "snap.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error().message().find(c.problem), std::string::npos) << parsed.error().message();
  }
}

TEST(SnapshotJson, RejectsANegativeOrNonNumericPoolSpend) {
  for (const char* value : {"-1", "\"10\""}) {
    SCOPED_TRACE(value);
    const std::string text = std::string(R"({"month_to_date_usd_by_pool": {"serve": )") + value + "}}";
    Result<Snapshot> parsed = ParseSnapshotJson(text, "snap.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error().message().find("snap.json: month_to_date_usd_by_pool: expected an object of numbers >= 0"),
              std::string::npos)
        << parsed.error().message();
  }
}

// A class's floor credit is negative when it held less than its floor: the
// map takes signed numbers, and nothing but numbers.
TEST(SnapshotJson, CarriesSignedFloorCredits) {
  Snapshot s;
  s.spot_floor_credit_gpus = {{"serve", -0.75}, {"web", 1.5}};
  const std::string text = FormatSnapshotJson(s);
  Result<Snapshot> back = ParseSnapshotJson(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->spot_floor_credit_gpus, s.spot_floor_credit_gpus);
  EXPECT_EQ(FormatSnapshotJson(*back), text);
  Result<Snapshot> bad = ParseSnapshotJson(R"({"spot_floor_credit_gpus": {"serve": "1"}})", "snap.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("snap.json: spot_floor_credit_gpus: expected an object of numbers"),
            std::string::npos)
      << bad.error().message();
}

// A node's placement group is read and written; a node outside any writes "".
TEST(SnapshotJson, CarriesANodesPlacementGroup) {
  Snapshot s;
  Node in_group;
  in_group.id = "i-1";
  in_group.offering.instance_type = "p5.48xlarge";
  in_group.placement_group = "train-gangs";
  Node alone = in_group;
  alone.id = "i-2";
  alone.placement_group.clear();
  s.nodes = {in_group, alone};
  const std::string text = FormatSnapshotJson(s);
  Result<Snapshot> back = ParseSnapshotJson(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->nodes.size(), 2u);
  EXPECT_EQ(back->nodes[0].placement_group, "train-gangs");
  EXPECT_EQ(back->nodes[1].placement_group, "");
  EXPECT_EQ(FormatSnapshotJson(*back), text);
}

// The nodes a unit avoids are read and written, pending and running alike.
TEST(SnapshotJson, CarriesTheNodesAUnitAvoids) {
  Snapshot s;
  DemandUnit pending;
  pending.id = "p";
  pending.avoid_nodes = {"ip-10-0-12-34", "i-0123456789abcdef0"};
  s.pending = {pending};
  Node n;
  n.id = "i-2";
  n.offering.instance_type = "g5.xlarge";
  DemandUnit running = pending;
  running.id = "r";
  n.running = {running};
  s.nodes = {n};
  const std::string text = FormatSnapshotJson(s);
  Result<Snapshot> back = ParseSnapshotJson(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->pending[0].avoid_nodes, pending.avoid_nodes);
  EXPECT_EQ(back->nodes[0].running[0].avoid_nodes, pending.avoid_nodes);
  EXPECT_EQ(FormatSnapshotJson(*back), text);
  Result<Snapshot> bad = ParseSnapshotJson(R"({"pending": [{"id": "a", "avoid_nodes": "n"}]})", "snap.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pending[0].avoid_nodes"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace gpuscaler
