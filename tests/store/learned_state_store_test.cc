// The learned_state table on both backends (AuditStore::SaveLearnedState,
// LearnedState): one document per owner, replaced, kept apart from other
// owners', written with the tick (so a rolled-back or fenced tick saves
// nothing), and copied by `gpuscaler db copy`.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "gpuscaler/store/copy.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler::learned_state_store_test {
namespace {

using testing_store::T;

class LearnedStateStore : public testing_store::BackendTest {
 protected:
  std::unique_ptr<SqliteAuditStore> OpenStore(const std::string& name = "audit.db") {
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(Db(name));
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  static std::optional<std::string> Read(SqliteAuditStore& store, const std::string& owner) {
    Result<std::optional<std::string>> saved = store.LearnedState(owner);
    EXPECT_TRUE(saved.ok()) << saved.error().ToString();
    return saved.ok() ? *saved : std::nullopt;
  }
};
INSTANTIATE_TEST_SUITE_P(Backends, LearnedStateStore, testing_store::AllBackends(), testing_store::BackendName);

TEST_P(LearnedStateStore, OneDocumentPerOwnerReplacedAsItChanges) {
  std::unique_ptr<SqliteAuditStore> store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(Read(*store, "prod"), std::nullopt);
  ASSERT_TRUE(store->SaveLearnedState("prod", T(100), R"({"version":1,"a":1})").ok());
  ASSERT_TRUE(store->SaveLearnedState("staging", T(100), R"({"version":1,"b":2})").ok());
  ASSERT_TRUE(store->SaveLearnedState("prod", T(160), R"({"version":1,"a":3})").ok());
  EXPECT_EQ(Read(*store, "prod"), R"({"version":1,"a":3})");
  EXPECT_EQ(Read(*store, "staging"), R"({"version":1,"b":2})");
  // Another connection (the next leader) reads what was committed.
  std::unique_ptr<SqliteAuditStore> next = OpenStore();
  ASSERT_TRUE(next);
  EXPECT_EQ(Read(*next, "prod"), R"({"version":1,"a":3})");
}

TEST_P(LearnedStateStore, ABadOwnerOrDocumentIsRefusedAndNothingSaved) {
  std::unique_ptr<SqliteAuditStore> store = OpenStore();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->SaveLearnedState("prod", T(100), R"({"version":1})").ok());
  Status empty_owner = store->SaveLearnedState("", T(110), R"({"version":1})");
  ASSERT_FALSE(empty_owner.ok());
  EXPECT_EQ(empty_owner.error().category(), ErrorCategory::kInvalidInput);
  for (const char* bad : {"[1]", "{", "", "\"text\""}) {
    Status s = store->SaveLearnedState("prod", T(120), bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_NE(s.error().message().find("not a JSON object"), std::string::npos) << s.error().message();
  }
  EXPECT_EQ(Read(*store, "prod"), R"({"version":1})");
}

TEST_P(LearnedStateStore, ItLandsWithItsTickAndAFencedLeaderSavesNothing) {
  std::unique_ptr<SqliteAuditStore> a = OpenStore();
  std::unique_ptr<SqliteAuditStore> b = OpenStore();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->ClaimLeadership({"prod", 1, "replica-a", T(100)}).ok());
  ASSERT_TRUE(a->BeginTick().ok());
  ASSERT_TRUE(a->SaveLearnedState("prod", T(110), R"({"version":1,"by":"a"})").ok());
  EXPECT_EQ(Read(*b, "prod"), std::nullopt) << "not committed yet";
  ASSERT_TRUE(a->CommitTick().ok());
  EXPECT_EQ(Read(*b, "prod"), R"({"version":1,"by":"a"})");

  // B takes over; A, back from a pause, saves in a tick that cannot commit.
  ASSERT_TRUE(b->ClaimLeadership({"prod", 2, "replica-b", T(120)}).ok());
  const Status begun = a->BeginTick();
  const Status saved = a->SaveLearnedState("prod", T(130), R"({"version":1,"by":"a-late"})");
  const Status committed = a->CommitTick();
  EXPECT_FALSE(begun.ok() && saved.ok() && committed.ok()) << "the fenced tick must fail somewhere";
  EXPECT_EQ(Read(*b, "prod"), R"({"version":1,"by":"a"})");
}

// From a file to PostgreSQL, as an operator moves to the HA setup.
TEST(LearnedStateCopy, DbCopyCarriesItAndKeepsTheTargetsOwn) {
  testing_store::TestDatabases files(testing_store::Backend::kSqlite);
  testing_store::TestDatabases servers(testing_store::Backend::kPostgres);
  const std::string source_db = files.Get("source.db");
  const std::string target_db = servers.Get("target");
  {
    Result<std::unique_ptr<SqliteAuditStore>> source = SqliteAuditStore::Open(source_db);
    ASSERT_TRUE(source.ok()) << source.error().ToString();
    ASSERT_TRUE((*source)->SaveLearnedState("prod", T(100), R"({"version":1,"from":"file"})").ok());
    ASSERT_TRUE((*source)->SaveLearnedState("staging", T(100), R"({"version":1,"from":"file"})").ok());
    Result<std::unique_ptr<SqliteAuditStore>> target = SqliteAuditStore::Open(target_db);
    ASSERT_TRUE(target.ok()) << target.error().ToString();
    ASSERT_TRUE((*target)->SaveLearnedState("prod", T(200), R"({"version":1,"from":"target"})").ok());
  }
  Result<CopySummary> copied = CopyAuditStore(source_db, target_db);
  ASSERT_TRUE(copied.ok()) << copied.error().ToString();
  Result<std::unique_ptr<SqliteAuditStore>> target = SqliteAuditStore::Open(target_db);
  ASSERT_TRUE(target.ok()) << target.error().ToString();
  Result<std::optional<std::string>> prod = (*target)->LearnedState("prod");
  Result<std::optional<std::string>> staging = (*target)->LearnedState("staging");
  ASSERT_TRUE(prod.ok() && staging.ok());
  EXPECT_EQ(*prod, R"({"version":1,"from":"target"})");
  EXPECT_EQ(*staging, R"({"version":1,"from":"file"})");
}

}  // namespace
}  // namespace gpuscaler::learned_state_store_test
