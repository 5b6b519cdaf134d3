// What a run records for reports besides its rows: the cloud it buys from
// and its instances' tags, and the work each interruption lost. A reader of
// a store from before these (schema version 5) reads it as not recorded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "src/store/schema.h"
#include "src/store/sqlite_db.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler {
namespace {

using store_internal::AuditMigrations;
using store_internal::Connection;
using testing_store::FullDecision;
using testing_store::NodeLaunch;
using testing_store::T;

constexpr int64_t kT0 = 1'800'000'000;

LostWorkRecord Lost(const std::string& instance_id, int64_t t, const std::string& cls, const std::string& team,
                    double gpu_seconds) {
  return LostWorkRecord{instance_id, T(t), cls, team, gpu_seconds};
}

class RunRecords : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, RunRecords, testing_store::AllBackends(), testing_store::BackendName);

TEST_P(RunRecords, ARunsCloudAndTagsAreReadBackWithTheRun) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->BeginRun({"prod", "daemon", "h", T(kT0)}).ok());
  RunCloud cloud;
  cloud.name = "gcp";
  cloud.instance_tags = {{"gpuscaler-cluster", "prod"}};
  cloud.pool_tags = {{"train", {{"gpuscaler-pool", "train"}}}};
  ASSERT_TRUE(store->RecordRunCloud(cloud).ok());
  ASSERT_TRUE(store->BeginRun({"replay", "sim", "h", T(kT0)}).ok());  // records none

  std::vector<RunRow> runs = std::move(std::move(store->OpenReader()).value()->Runs()).value();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].cloud.name, "gcp");
  EXPECT_EQ(runs[0].cloud.instance_tags, cloud.instance_tags);
  EXPECT_EQ(runs[0].cloud.pool_tags, cloud.pool_tags);
  EXPECT_EQ(runs[1].cloud.name, "");
  EXPECT_TRUE(runs[1].cloud.instance_tags.empty());
  EXPECT_TRUE(runs[1].cloud.pool_tags.empty());
}

TEST_P(RunRecords, LostWorkIsReadByTimeAndRunAndATwiceRecordedLossIsRejected) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->BeginRun({"first", "sim", "h", T(kT0)}).ok());
  ASSERT_TRUE(store->RecordLostWork({Lost("i-1", kT0 + 600, "train", "ml", 1200),
                                     Lost("i-1", kT0 + 600, "eval", "", 300), Lost("i-2", kT0 + 900, "", "", 0)})
                  .ok());
  ASSERT_TRUE(store->BeginRun({"second", "sim", "h", T(kT0)}).ok());
  ASSERT_TRUE(store->RecordLostWork({Lost("i-9", kT0 + 700, "train", "", 50)}).ok());

  Status twice = store->RecordLostWork({Lost("i-9", kT0 + 700, "train", "", 60)});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().category(), ErrorCategory::kInvalidInput) << twice.error().ToString();
  EXPECT_EQ(store->RecordLostWork({Lost("i-9", kT0 + 800, "train", "", -1)}).error().category(),
            ErrorCategory::kInvalidInput);

  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  EXPECT_TRUE(reader->LostWorkRecorded());
  std::vector<LostWorkRecord> all = std::move(reader->LostWork(T(kT0), T(kT0 + 3600))).value();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].workload_class, "eval");  // by time, then instance, class, team
  EXPECT_EQ(all[1].workload_class, "train");
  EXPECT_EQ(all[1].team, "ml");
  EXPECT_EQ(all[1].gpu_seconds, 1200);
  EXPECT_EQ(all[2].instance_id, "i-9");
  EXPECT_EQ(all[3].instance_id, "i-2");
  EXPECT_EQ(all[3].gpu_seconds, 0);
  // Half-open: a loss at `to` is not in the range.
  EXPECT_EQ(std::move(reader->LostWork(T(kT0), T(kT0 + 600))).value().size(), 0u);

  std::vector<RunRow> runs = std::move(reader->Runs()).value();
  reader->SelectRun(runs[0].id);
  EXPECT_EQ(std::move(reader->LostWork(T(kT0), T(kT0 + 3600))).value().size(), 3u);
}

// Retention drops a node's lost work with the node, and keeps the lost
// work of a node it keeps.
TEST_P(RunRecords, PruningANodeDropsItsLostWorkAndKeepsAKeptNodes) {
  for (const bool batched : {false, true}) {
    SCOPED_TRACE(batched ? "PruneBatch" : "PruneBefore");
    std::unique_ptr<SqliteAuditStore> store =
        std::move(SqliteAuditStore::Open(Db(batched ? "batched.db" : "whole.db"))).value();
    ASSERT_TRUE(store->BeginRun({"prod", "daemon", "h", T(kT0)}).ok());
    Result<int64_t> d = store->RecordDecision(FullDecision(kT0));
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-old", *d, kT0)).ok());
    ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-kept", *d, kT0)).ok());
    ASSERT_TRUE(store->RecordNodeEnd({"i-old", T(kT0 + 3600), "interrupted"}).ok());
    ASSERT_TRUE(store->RecordNodeEnd({"i-kept", T(kT0 + 3 * 3600), "interrupted"}).ok());
    ASSERT_TRUE(store->RecordLostWork({Lost("i-old", kT0 + 3600, "train", "", 10)}).ok());
    ASSERT_TRUE(store->RecordLostWork({Lost("i-kept", kT0 + 3 * 3600, "train", "", 20)}).ok());

    const WallTime cut = T(kT0 + 2 * 3600);
    if (batched) {
      ASSERT_TRUE(store->RecordMonthlyUsage({}, cut).ok());
      Result<int64_t> deleted = int64_t{1};
      while (deleted.ok() && *deleted > 0) deleted = store->PruneBatch(cut, 1);
      ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
    } else {
      ASSERT_TRUE(store->PruneBefore(cut).ok());
    }
    std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
    std::vector<LostWorkRecord> left = std::move(reader->LostWork(T(kT0), T(kT0 + 4 * 3600))).value();
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].instance_id, "i-kept");
    EXPECT_EQ(std::move(reader->NodesOverlapping(T(kT0), T(kT0 + 4 * 3600))).value().size(), 1u);
  }
}

// A store written before version 6 is read as it is: its runs name no
// cloud and it has no lost work (reports then estimate the loss); a writer
// migrates it.
TEST_P(RunRecords, AVersionFiveStoreReadsAsRecordingNeitherCloudsNorLostWork) {
  const std::string path = Db("v5.db");
  {
    std::shared_ptr<Connection> db = Connect("v5.db");
    ASSERT_TRUE(store_internal::Migrate(*db, AuditMigrations().first(5)).ok());
    ASSERT_TRUE(db->Exec("INSERT INTO runs (name, source, policy_hash, started) VALUES ('old', 'daemon', 'h', 0)",
                         "a run")
                    .ok());
  }
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  EXPECT_EQ((*reader)->SchemaVersion(), 5);
  EXPECT_FALSE((*reader)->LostWorkRecorded());
  std::vector<RunRow> runs = std::move((*reader)->Runs()).value();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.name, "old");
  EXPECT_EQ(runs[0].cloud.name, "");
  Result<std::vector<LostWorkRecord>> lost = (*reader)->LostWork(T(0), T(kT0));
  ASSERT_TRUE(lost.ok()) << lost.error().ToString();
  EXPECT_TRUE(lost->empty());
  reader->reset();

  ASSERT_TRUE(SqliteAuditStore::Open(path).ok());
  Result<std::unique_ptr<AuditReader>> migrated = AuditReader::Open(path);
  ASSERT_TRUE(migrated.ok());
  EXPECT_TRUE((*migrated)->LostWorkRecorded());
  EXPECT_EQ(std::move((*migrated)->Runs()).value()[0].cloud.name, "");
}

}  // namespace
}  // namespace gpuscaler
