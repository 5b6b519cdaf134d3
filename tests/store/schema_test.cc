#include "src/store/schema.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/store/sqlite_db.h"
#include "store/store_test_util.h"

namespace gpuscaler::store_internal {
namespace {

using testing_store::TempDir;

constexpr Migration kTwoSteps[] = {
    {1, "versions and a table", "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                                "description TEXT NOT NULL, applied_at INTEGER NOT NULL); "
                                "CREATE TABLE t (a INTEGER);"},
    {2, "a column", "ALTER TABLE t ADD COLUMN b TEXT NOT NULL DEFAULT 'x';"},
};
constexpr Migration kBroken[] = {
    kTwoSteps[0],
    kTwoSteps[1],
    {3, "a bad one", "CREATE TABLE t2 (a INTEGER); ALTER TABLE nowhere ADD COLUMN c TEXT;"},
};

std::shared_ptr<Connection> OpenRaw(const std::string& path) {
  Result<std::shared_ptr<Connection>> db =
      Connection::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, std::chrono::milliseconds(100));
  EXPECT_TRUE(db.ok());
  return db.ok() ? *db : nullptr;
}

std::vector<int64_t> Versions(Connection& db) {
  std::vector<int64_t> out;
  Result<Query> q = db.Prepare("SELECT version FROM schema_version ORDER BY version");
  EXPECT_TRUE(q.ok());
  while (q.ok() && q->Step("versions").value()) out.push_back(q->Int(0));
  return out;
}

TEST(Schema, AppliesMigrationsInOrderFromWhereTheFileIs) {
  TempDir dir;
  const std::string path = dir.File("m.db");
  auto db = OpenRaw(path);
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(Migrate(*db, std::span(kTwoSteps).first(1)).ok());
  EXPECT_EQ(Versions(*db), (std::vector<int64_t>{1}));
  ASSERT_TRUE(db->Exec("INSERT INTO t (a) VALUES (7)", "seed").ok());

  ASSERT_TRUE(Migrate(*db, kTwoSteps).ok());
  EXPECT_EQ(Versions(*db), (std::vector<int64_t>{1, 2}));
  Result<Query> q = db->Prepare("SELECT a, b FROM t");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(q->Step("read").value());
  EXPECT_EQ(q->Int(0), 7) << "data survives the migration";
  EXPECT_EQ(q->Text(1), "x");
}

TEST(Schema, AFailedMigrationLeavesThePreviousVersion) {
  TempDir dir;
  auto db = OpenRaw(dir.File("m.db"));
  ASSERT_NE(db, nullptr);
  Status s = Migrate(*db, kBroken);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("version 3"), std::string::npos) << s.error().ToString();
  EXPECT_EQ(Versions(*db), (std::vector<int64_t>{1, 2}));
  Result<Query> q = db->Prepare("SELECT count(*) FROM sqlite_master WHERE name = 't2'");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(q->Step("read").value());
  EXPECT_EQ(q->Int(0), 0) << "the failed migration is rolled back whole";
}

TEST(Schema, RefusesToDowngrade) {
  TempDir dir;
  auto db = OpenRaw(dir.File("m.db"));
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(Migrate(*db, kTwoSteps).ok());
  Status s = Migrate(*db, std::span(kTwoSteps).first(1));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(Versions(*db), (std::vector<int64_t>{1, 2}));
}

TEST(Schema, TheAuditMigrationsAreNumberedWithoutGaps) {
  int want = 1;
  for (const Migration& m : AuditMigrations()) {
    EXPECT_EQ(m.version, want++);
    EXPECT_FALSE(m.description.empty());
  }
}

}  // namespace
}  // namespace gpuscaler::store_internal
