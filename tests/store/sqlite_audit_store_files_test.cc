// The audit database itself: its schema created in an empty file or database
// and reopened, its own installation id, a newer schema or another program's
// file refused, a second writer or a full disk a transient error, and an
// in-memory store read through its own connection.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/database_url.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/backends.h"
#include "store/sqlite_audit_store_fixture.h"
#include "store/store_test_util.h"

namespace gpuscaler::sqlite_audit_store_files_test {
namespace {

using sqlite_audit_store_testing::OpenReader;
using sqlite_audit_store_testing::OpenStore;
using sqlite_audit_store_testing::Store;
using testing_store::FullDecision;
using testing_store::T;
using testing_store::TempDir;

// Runs one statement on a separate raw connection (to tamper with a file or
// database as another program would) and returns the first column of the
// first row.
std::string RawQuery(const std::string& path, const char* sql) {
  if (IsPostgresUrl(path)) {
    Result<std::shared_ptr<store_internal::PostgresConnection>> db =
        store_internal::PostgresConnection::Connect({.url = path});
    if (!db) {
      ADD_FAILURE() << db.error().ToString();
      return "";
    }
    Result<store_internal::Query> q = (*db)->Prepare(sql);
    Result<bool> row = q ? q->Step("raw query") : Result<bool>(q.error());
    if (!row) {
      ADD_FAILURE() << row.error().ToString();
      return "";
    }
    return *row ? q->Text(0) : "";
  }
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      ADD_FAILURE() << sqlite3_errmsg(db);
    }
  } else {
    ADD_FAILURE() << sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

TEST_P(Store, EachDatabaseHasItsOwnInstallationIdThatSurvivesReopening) {
  std::string first;
  {
    std::unique_ptr<SqliteAuditStore> a = OpenStore(Db("a.db"));
    ASSERT_NE(a, nullptr);
    Result<std::string> id = a->InstallationId();
    ASSERT_TRUE(id.ok()) << id.error().ToString();
    EXPECT_EQ(id->size(), 12u);
    first = *id;
  }
  std::unique_ptr<SqliteAuditStore> again = OpenStore(Db("a.db"));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->InstallationId().value(), first);
  std::unique_ptr<SqliteAuditStore> other = OpenStore(Db("b.db"));
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->InstallationId().value(), first);
}

TEST_P(Store, CreatesTheSchemaInAnEmptyFileAndReopensIt) {
  const std::string path = Db("audit.db");
  if (!postgres()) std::ofstream(path).flush();  // an empty file is an empty database
  ASSERT_NE(OpenStore(path), nullptr);
  EXPECT_EQ(RawQuery(path, "SELECT max(version) FROM schema_version"),
            std::to_string(SqliteAuditStore::CurrentSchemaVersion()));
  if (!postgres()) {
    EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  }
  ASSERT_NE(OpenStore(path), nullptr);
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM schema_version"),
            std::to_string(SqliteAuditStore::CurrentSchemaVersion()));
  for (const char* table : {"decisions", "actions", "nodes", "node_prices", "price_samples", "usage", "installation"}) {
    SCOPED_TRACE(table);
    const std::string sql =
        std::string(postgres() ? "SELECT count(*) FROM information_schema.tables WHERE table_name = '"
                               : "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '") +
        table + "'";
    EXPECT_EQ(RawQuery(path, sql.c_str()), "1");
  }
}

TEST_P(Store, RefusesASchemaNewerThanTheBinary) {
  const std::string path = Db("audit.db");
  ASSERT_NE(OpenStore(path), nullptr);
  RawQuery(path, "INSERT INTO schema_version (version, description, applied_at) VALUES (99, 'future', 0)");

  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(store.error().message().find("version 99 is newer"), std::string::npos) << store.error().ToString();
  EXPECT_EQ(RawQuery(path, "SELECT max(version) FROM schema_version"), "99") << "never downgraded";

  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.error().category(), ErrorCategory::kConfig);
}

// The fleet report's directory walk asks this instead of reading error text.
TEST(AuditReader, TellsAuditDatabasesFromOtherSqliteFiles) {
  TempDir dir;
  const std::string audit = dir.File("audit.db");
  ASSERT_NE(OpenStore(audit), nullptr);
  const std::string foreign = dir.File("foreign.db");
  RawQuery(foreign, "CREATE TABLE customers (name TEXT)");
  const std::string other_app = dir.File("other_app.db");
  RawQuery(other_app, "PRAGMA application_id = 7");
  const std::string newer = dir.File("newer.db");
  ASSERT_NE(OpenStore(newer), nullptr);
  RawQuery(newer, "INSERT INTO schema_version (version, description, applied_at) VALUES (99, 'future', 0)");
  const std::string empty = dir.File("empty.db");
  RawQuery(empty, "PRAGMA user_version = 0");
  for (const auto& [path, expected] : std::vector<std::pair<std::string, bool>>{
           {audit, true}, {newer, true}, {foreign, false}, {other_app, false}, {empty, false}}) {
    SCOPED_TRACE(path);
    Result<bool> is_audit = AuditReader::IsAuditDatabase(path);
    ASSERT_TRUE(is_audit.ok()) << is_audit.error().ToString();
    EXPECT_EQ(*is_audit, expected);
  }
  EXPECT_FALSE(AuditReader::IsAuditDatabase(dir.File("missing.db")).ok());
}

TEST(SqliteAuditStore, RefusesFilesThatAreNotAuditDatabases) {
  TempDir dir;
  const std::string foreign = dir.File("foreign.db");
  RawQuery(foreign, "CREATE TABLE customers (name TEXT)");
  const std::string garbage = dir.File("garbage.db");
  { std::ofstream(garbage) << "this is not a database, just a text file that is long enough to have a header"; }
  for (const std::string& path : {foreign, garbage}) {
    SCOPED_TRACE(path);
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.error().category(), ErrorCategory::kConfig) << store.error().ToString();
  }
  Result<std::unique_ptr<AuditReader>> missing = AuditReader::Open(dir.File("missing.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().category(), ErrorCategory::kNotFound);
  Result<std::unique_ptr<SqliteAuditStore>> no_dir = SqliteAuditStore::Open(dir.File("no/such/dir/audit.db"));
  ASSERT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.error().category(), ErrorCategory::kConfig) << no_dir.error().ToString();
}

TEST(SqliteAuditStore, SecondWriterGetsATransientError) {
  TempDir dir;
  const std::string path = dir.File("audit.db");
  auto first = OpenStore(path);
  ASSERT_NE(first, nullptr);
  auto second = OpenStore(path, SqliteAuditStoreOptions{.busy_timeout = std::chrono::milliseconds(0)});
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->BeginTick().ok());
  Status blocked = second->BeginTick();
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().category(), ErrorCategory::kTransient) << blocked.error().ToString();
  Status write = second->RecordDecision(FullDecision(1)).status();
  ASSERT_FALSE(write.ok());
  EXPECT_EQ(write.error().category(), ErrorCategory::kTransient);
  // The locked tick records nothing and ends with CommitTick, which says so.
  Status commit = second->CommitTick();
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.error().category(), ErrorCategory::kTransient);
  ASSERT_TRUE(first->CommitTick().ok());
  EXPECT_TRUE(second->RecordDecision(FullDecision(1)).ok());
}

TEST(SqliteAuditStore, FullDatabaseIsATransientErrorNotACrash) {
  TempDir dir;
  const std::string path = dir.File("audit.db");
  auto store = OpenStore(path, SqliteAuditStoreOptions{.max_size_mib = 1});
  ASSERT_NE(store, nullptr);
  DecisionRecord big = FullDecision(100);
  big.plan_json = "\"" + std::string(64 * 1024, 'p') + "\"";
  ASSERT_TRUE(store->BeginTick().ok());
  Status failure;
  int written = 0;
  for (int i = 0; i < 100 && failure.ok(); ++i) {
    Result<int64_t> id = store->RecordDecision(big);
    failure = id.status();
    written += id.ok() ? 1 : 0;
  }
  ASSERT_FALSE(failure.ok()) << "1 MiB cannot hold 100 × 64 KiB";
  EXPECT_GT(written, 0);
  EXPECT_EQ(failure.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(failure.error().message().find("disk full"), std::string::npos) << failure.error().ToString();
  (void)store->CommitTick();  // either outcome is acceptable; it must not crash
  Result<std::string> integrity = store->IntegrityCheck();
  ASSERT_TRUE(integrity.ok()) << integrity.error().ToString();
  EXPECT_EQ(*integrity, "ok");
}

TEST(SqliteAuditStore, InMemoryStoreSharesItsConnectionWithItsReader) {
  auto store = OpenStore(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->BeginTick().ok());
  ASSERT_TRUE(store->RecordDecision(FullDecision(100)).ok());
  Result<std::unique_ptr<AuditReader>> reader = store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<DecisionRow>> rows = (*reader)->DecisionsSince(T(0), 10);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  EXPECT_EQ(rows->size(), 1u);
  ASSERT_TRUE(store->CommitTick().ok());
  Result<std::unique_ptr<AuditReader>> direct = AuditReader::Open(":memory:");
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(direct.error().category(), ErrorCategory::kInvalidInput);
}

}  // namespace
}  // namespace gpuscaler::sqlite_audit_store_files_test
