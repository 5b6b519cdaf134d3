// Reserved capacity in the audit store: each run's reservations, one row
// per version, and the reservation a node was launched into. A store from
// before them (schema version 6) reads as recording none.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "src/store/schema.h"
#include "src/store/sqlite_db.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler::store_reservations_test {
namespace {

using store_internal::AuditMigrations;
using store_internal::Connection;
using testing_store::NodeLaunch;
using testing_store::T;

constexpr int64_t kT0 = 1'800'000'000;

ReservationRecord Odcr(const std::string& id, int count) {
  ReservationRecord r;
  r.reservation.id = id;
  r.reservation.instance_type = "p5.48xlarge";
  r.reservation.region = "us-east-1";
  r.reservation.zone = "us-east-1a";
  r.reservation.total_count = count;
  r.reservation.available_count = count;
  r.reservation.start = T(kT0 - 3600);
  r.reservation.usd_per_hour = 98.32;
  r.reservation.tags = {{"team", "ml"}};
  r.pools = {"h100"};
  return r;
}

ReservationRecord Block(const std::string& id) {
  ReservationRecord r = Odcr(id, 4);
  r.reservation.kind = ReservationKind::kCapacityBlock;
  r.reservation.start = T(kT0);
  r.reservation.end = T(kT0 + 24 * 3600);
  r.reservation.upfront_usd = 3000;
  r.reservation.usd_per_hour = 3000.0 / (4 * 24);
  r.reservation.tags.clear();
  r.pools = {"h100", "batch"};
  return r;
}

std::vector<ReservationRow> Rows(SqliteAuditStore& store) {
  return std::move(std::move(store.OpenReader()).value()->Reservations()).value();
}

class Reservations : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Reservations, testing_store::AllBackends(), testing_store::BackendName);

TEST_P(Reservations, AListingIsReadBackWithEveryField) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->BeginRun({"prod", "daemon", "h", T(kT0)}).ok());
  ASSERT_TRUE(store->RecordReservations({Odcr("cr-1", 2), Block("cb-1")}, T(kT0 + 60)).ok());
  const std::vector<ReservationRow> rows = Rows(*store);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].record.reservation.id, "cb-1");
  ReservationRecord want = Block("cb-1");
  want.reservation.available_count = 0;  // not recorded
  EXPECT_EQ(rows[0].record, want);
  EXPECT_EQ(rows[0].first_seen, T(kT0 + 60));
  EXPECT_FALSE(rows[0].last_seen.has_value());
  EXPECT_EQ(rows[0].run_id, *store->run_id());
  want = Odcr("cr-1", 2);
  want.reservation.available_count = 0;
  EXPECT_EQ(rows[1].record, want);
  EXPECT_FALSE(rows[1].record.reservation.end.has_value());
}

TEST_P(Reservations, AChangeStartsAVersionAndAReservationNoLongerListedEnds) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->BeginRun({"prod", "daemon", "h", T(kT0)}).ok());
  ASSERT_TRUE(store->RecordReservations({Odcr("cr-1", 2), Block("cb-1")}, T(kT0)).ok());
  // Free slots change with every launch: not a new version.
  ReservationRecord busy = Odcr("cr-1", 2);
  busy.reservation.available_count = 0;
  ASSERT_TRUE(store->RecordReservations({busy, Block("cb-1")}, T(kT0 + 600)).ok());
  EXPECT_EQ(Rows(*store).size(), 2u);
  // The ODCR grows to 3 slots; the block is no longer listed.
  ASSERT_TRUE(store->RecordReservations({Odcr("cr-1", 3)}, T(kT0 + 1200)).ok());
  const std::vector<ReservationRow> rows = Rows(*store);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].record.reservation.id, "cb-1");
  EXPECT_EQ(rows[0].last_seen, T(kT0 + 1200));
  EXPECT_EQ(rows[1].record.reservation.total_count, 2);
  EXPECT_EQ(rows[1].first_seen, T(kT0));
  EXPECT_EQ(rows[1].last_seen, T(kT0 + 1200));
  EXPECT_EQ(rows[2].record.reservation.total_count, 3);
  EXPECT_EQ(rows[2].first_seen, T(kT0 + 1200));
  EXPECT_FALSE(rows[2].last_seen.has_value());
}

TEST_P(Reservations, EachRunKeepsItsOwnListingAndTheReaderSelectsARun) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  const int64_t first = std::move(store->BeginRun({"a", "sim", "h", T(kT0)})).value();
  ASSERT_TRUE(store->RecordReservations({Odcr("cr-1", 2)}, T(kT0)).ok());
  ASSERT_TRUE(store->BeginRun({"b", "sim", "h", T(kT0)}).ok());
  ASSERT_TRUE(store->RecordReservations({Odcr("cr-1", 2)}, T(kT0)).ok());
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  EXPECT_EQ(std::move(reader->Reservations()).value().size(), 2u);
  reader->SelectRun(first);
  const std::vector<ReservationRow> mine = std::move(reader->Reservations()).value();
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].run_id, first);
}

TEST_P(Reservations, ABadReservationIsRejectedAndNothingIsRecorded) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->BeginRun({"prod", "daemon", "h", T(kT0)}).ok());
  struct Case {
    std::string name;
    ReservationRecord bad;
  };
  std::vector<Case> cases = {{"empty id", Odcr("", 1)}, {"negative count", Odcr("cr-2", -1)}};
  cases.push_back({"negative price", Odcr("cr-3", 1)});
  cases.back().bad.reservation.usd_per_hour = -1;
  cases.push_back({"ends before it starts", Block("cb-2")});
  cases.back().bad.reservation.end = T(kT0 - 1);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = store->RecordReservations({Odcr("cr-1", 1), c.bad}, T(kT0));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_TRUE(Rows(*store).empty());
  }
  Status twice = store->RecordReservations({Odcr("cr-1", 1), Odcr("cr-1", 2)}, T(kT0));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("listed twice"), std::string::npos) << twice.error().ToString();
}

TEST_P(Reservations, ANodeInAReservationReadsAsReservedWithItsId) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->BeginRun({"prod", "daemon", "h", T(kT0)}).ok());
  NodeLaunchRecord reserved = NodeLaunch("i-res", 0, kT0);
  reserved.offering.capacity_type = CapacityType::kReserved;
  reserved.offering.reservation_id = "cr-1";
  ASSERT_TRUE(store->RecordNodeLaunch(reserved).ok());
  NodeLaunchRecord on_demand = NodeLaunch("i-od", 0, kT0 + 1);
  on_demand.offering.capacity_type = CapacityType::kOnDemand;
  ASSERT_TRUE(store->RecordNodeLaunch(on_demand).ok());
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  const std::vector<NodeRow> nodes = std::move(reader->NodesOverlapping(T(kT0), T(kT0 + 60))).value();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].launch.offering.capacity_type, CapacityType::kReserved);
  EXPECT_EQ(nodes[0].launch.offering.reservation_id, "cr-1");
  EXPECT_EQ(nodes[1].launch.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(nodes[1].launch.offering.reservation_id, "");
  // The table keeps the purchase option: an instance in an ODCR is bought
  // on demand.
  Result<std::vector<NodeLifecycle>> lives = store->NodeLifecycles(T(kT0), T(kT0 + 60));
  ASSERT_TRUE(lives.ok());
  EXPECT_EQ((*lives)[0].offering.reservation_id, "cr-1");
}

// A version-6 file: read as it is (no reservations, no node in one); a
// writer migrates it and its old nodes still have none.
TEST_P(Reservations, AVersionSixStoreReadsAsRecordingNoReservations) {
  const std::string path = Db("v6.db");
  {
    std::shared_ptr<Connection> db = Connect("v6.db");
    ASSERT_TRUE(store_internal::Migrate(*db, AuditMigrations().first(6)).ok());
    ASSERT_TRUE(
        db->Exec(
              "INSERT INTO runs (name, source, policy_hash, started) VALUES ('old', 'daemon', 'h', 0);"
              "INSERT INTO nodes (instance_id, node_id, pool, instance_type, region, zone, capacity_type, "
              "launch_usd_per_hour, on_demand_usd_per_hour, interruptions_per_hour, gpu_count, launch_time, "
              "reason, run_id) VALUES ('i-old', 'n', 'p', 'p5.48xlarge', 'us-east-1', 'us-east-1a', "
              "'on-demand', 98.32, 98.32, 0, 8, 100, 'r', 1);"
              "INSERT INTO node_prices VALUES ('i-old', 100, 98.32);",
              "old rows")
            .ok());
  }
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  EXPECT_EQ((*reader)->SchemaVersion(), 6);
  EXPECT_FALSE((*reader)->ReservationsRecorded());
  Result<std::vector<ReservationRow>> none = (*reader)->Reservations();
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_TRUE(none->empty());
  Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(T(0), T(200));
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].launch.offering.capacity_type, CapacityType::kOnDemand);
  reader->reset();

  ASSERT_TRUE(SqliteAuditStore::Open(path).ok());
  Result<std::unique_ptr<AuditReader>> migrated = AuditReader::Open(path);
  ASSERT_TRUE(migrated.ok());
  EXPECT_EQ((*migrated)->SchemaVersion(), SqliteAuditStore::CurrentSchemaVersion());
  EXPECT_TRUE((*migrated)->ReservationsRecorded());
  Result<std::vector<NodeRow>> after = (*migrated)->NodesOverlapping(T(0), T(200));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].launch.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ((*after)[0].launch.offering.reservation_id, "");
}

}  // namespace
}  // namespace gpuscaler::store_reservations_test
