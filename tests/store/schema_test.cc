#include "src/store/schema.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/store/sqlite_db.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler::store_internal {
namespace {


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

std::vector<int64_t> Versions(Connection& db) {
  std::vector<int64_t> out;
  Result<Query> q = db.Prepare("SELECT version FROM schema_version ORDER BY version");
  EXPECT_TRUE(q.ok());
  while (q.ok() && q->Step("versions").value()) out.push_back(q->Int(0));
  return out;
}

class Schema : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Schema, testing_store::AllBackends(), testing_store::BackendName);

TEST_P(Schema, AppliesMigrationsInOrderFromWhereTheFileIs) {
  auto db = Connect("m.db");
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

TEST_P(Schema, AFailedMigrationLeavesThePreviousVersion) {
  auto db = Connect("m.db");
  ASSERT_NE(db, nullptr);
  Status s = Migrate(*db, kBroken);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("version 3"), std::string::npos) << s.error().ToString();
  EXPECT_EQ(Versions(*db), (std::vector<int64_t>{1, 2}));
  Result<Query> q = db->Prepare(postgres() ? "SELECT count(*) FROM information_schema.tables WHERE table_name = 't2'"
                                           : "SELECT count(*) FROM sqlite_master WHERE name = 't2'");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(q->Step("read").value());
  EXPECT_EQ(q->Int(0), 0) << "the failed migration is rolled back whole";
}

TEST_P(Schema, RefusesToDowngrade) {
  auto db = Connect("m.db");
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
