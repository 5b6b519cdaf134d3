// A run recorded in SQLite and copied to PostgreSQL (`gpuscaler db copy`)
// reports byte for byte the same in every format, and the same store is not
// copied twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/copy.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report/demo_stores.h"
#include "store/backends.h"

namespace gpuscaler::report::postgres_copy_test {
namespace {

using Params = std::map<std::string, std::string>;

std::string Render(const std::string& db, Params params) {
  Result<ReportQuery> q = ParseReportQuery(params);
  EXPECT_TRUE(q.ok()) << q.error().ToString();
  if (!q) return "";
  q->db_path = db;
  Result<RenderedReport> r = RenderReport(*q);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  return r ? r->body : "";
}

std::vector<RunRow> Runs(const std::string& db) {
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db);
  EXPECT_TRUE(reader.ok()) << reader.error().ToString();
  if (!reader) return {};
  Result<std::vector<RunRow>> runs = (*reader)->Runs();
  EXPECT_TRUE(runs.ok()) << runs.error().ToString();
  return runs ? *runs : std::vector<RunRow>{};
}

size_t FirstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

std::string Around(const std::string& text, size_t at) {
  const size_t from = at > 200 ? at - 200 : 0;
  return text.substr(from, 400);
}

// A daemon's store for `cluster`: one run named after it, a launch (its
// intent token carries the cluster, as the daemon's do), the node and an
// hour of its usage.
void WriteClusterStore(const std::string& path, const std::string& cluster, double usd_per_hour) {
  using testing_store::T;
  Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  SqliteAuditStore& store = **opened;
  const int64_t t0 = 1'800'000'000;
  ASSERT_TRUE(store.BeginRun({cluster, "daemon", "hash-" + cluster, T(t0)}).ok());
  DecisionRecord d = testing_store::FullDecision(t0);
  d.plan_json = "{}";
  Result<int64_t> decision = store.RecordDecision(d);
  ASSERT_TRUE(decision.ok()) << decision.error().ToString();
  Result<int64_t> action =
      store.RecordActionIntent(testing_store::LaunchAction(*decision, cluster + "-abc-1-0"));
  ASSERT_TRUE(action.ok()) << action.error().ToString();
  const std::string instance = "i-" + cluster;
  ASSERT_TRUE(store.RecordActionOutcome(*action, ActionOutcome::kSucceeded, "", {instance}).ok());
  NodeLaunchRecord node = testing_store::NodeLaunch(instance, *decision, t0);
  node.offering.usd_per_hour = usd_per_hour;
  ASSERT_TRUE(store.RecordNodeLaunch(node).ok());
  UsageRecord usage;
  usage.instance_id = instance;
  usage.workload_class = "render";
  usage.team = "vfx";
  usage.start = T(t0);
  usage.end = T(t0 + 3600);
  usage.gpu_seconds_allocated = 4 * 3600;
  usage.gpu_seconds_busy = 3 * 3600;
  ASSERT_TRUE(store.RecordUsage({usage}).ok());
  ASSERT_TRUE(store.RecordNodeEnd({instance, T(t0 + 3600), "terminated"}).ok());
  ASSERT_TRUE(store.EndRun(T(t0 + 3600)).ok());
}

// Every row of `table` (its columns `columns`, of declared types `types`),
// each rendered as one line, sorted: two stores hold the same rows when
// these are equal, whatever their backends' orders and number formats.
std::vector<std::string> SortedRows(store_internal::Connection& db, const std::string& table,
                                    const std::vector<std::string>& columns,
                                    const std::vector<std::string>& types) {
  std::string sql = "SELECT ";
  for (size_t i = 0; i < columns.size(); ++i) sql += (i > 0 ? ", " : "") + columns[i];
  sql += " FROM " + table;
  Result<store_internal::Query> q = db.Prepare(sql.c_str());
  EXPECT_TRUE(q.ok()) << q.error().ToString();
  std::vector<std::string> rows;
  if (!q) return rows;
  for (;;) {
    Result<bool> more = q->Step("reading " + table);
    EXPECT_TRUE(more.ok()) << more.error().ToString();
    if (!more.ok() || !*more) break;
    std::string row;
    for (size_t i = 0; i < columns.size(); ++i) {
      const int col = static_cast<int>(i);
      if (q->IsNull(col))
        row += "NULL";
      else if (types[i] == "INTEGER")
        row += std::to_string(q->Int(col));
      else if (types[i] == "REAL")
        row += std::to_string(q->Real(col));
      else if (types[i] == "BLOB")
        row += "blob:" + std::to_string(std::hash<std::string>()(q->Blob(col)));
      else
        row += "'" + q->Text(col) + "'";
      row += " | ";
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

class PostgresCopy : public ::testing::Test {
 protected:
  PostgresCopy() : databases_(gpuscaler::testing_store::Backend::kPostgres) {}
  std::string Store(const std::string& cluster) {
    Result<std::string> store = testing::DemoStore(cluster, scratch_.File(""));
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store ? *store : "";
  }
  gpuscaler::testing_store::TempDir scratch_;
  gpuscaler::testing_store::TestDatabases databases_;
};

TEST_F(PostgresCopy, EveryReportFormatIsByteForByteTheSameFromTheCopy) {
  const std::string sqlite = Store("east");
  // Named as the file is: a report names a store of simulated runs after it.
  const std::string postgres = databases_.Get("east", /*exact=*/true);
  Result<CopySummary> copied = CopyAuditStore(sqlite, postgres);
  ASSERT_TRUE(copied.ok()) << copied.error().ToString();
  EXPECT_GT(copied->rows.at("decisions"), 0);
  EXPECT_GT(copied->rows.at("usage"), 0);
  const std::vector<RunRow> runs = Runs(sqlite);
  ASSERT_FALSE(runs.empty());
  for (const RunRow& run : runs) {
    for (const char* format : {"csv", "focus", "json", "html"}) {
      SCOPED_TRACE(run.run.name + " " + format);
      const Params params = {{"run", run.run.name}, {"format", format}, {"group_by", "class,team"}};
      const std::string from_sqlite = Render(sqlite, params);
      ASSERT_FALSE(from_sqlite.empty());
      const std::string from_postgres = Render(postgres, params);
      EXPECT_TRUE(from_sqlite == from_postgres)
          << "the reports differ from byte " << FirstDifference(from_sqlite, from_postgres) << ":\n"
          << Around(from_sqlite, FirstDifference(from_sqlite, from_postgres)) << "\n---\n"
          << Around(from_postgres, FirstDifference(from_sqlite, from_postgres));
    }
  }
}

TEST_F(PostgresCopy, ASecondCopyOfTheSameStoreIsRefusedAndChangesNothing) {
  const std::string east = Store("east");
  const std::string shared = databases_.Get("fleet");
  ASSERT_TRUE(CopyAuditStore(east, shared).ok());
  const size_t runs = Runs(shared).size();
  Result<CopySummary> again = CopyAuditStore(east, shared);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().category(), ErrorCategory::kInvalidInput) << again.error().ToString();
  EXPECT_NE(again.error().message().find("copied there before"), std::string::npos)
      << again.error().ToString();
  EXPECT_EQ(Runs(shared).size(), runs);
}

// Many clusters may share one database: each daemon's run names its cluster,
// and a report of one run reads as the report of that cluster's own file.
TEST_F(PostgresCopy, TwoClustersCopiedIntoOneDatabaseStayApartAndReportOneByOne) {
  const std::string east = scratch_.File("east-daemon.db"), west = scratch_.File("west-daemon.db");
  WriteClusterStore(east, "east", 2.5);
  WriteClusterStore(west, "west", 3.25);
  const std::string shared = databases_.Get("fleet");
  ASSERT_TRUE(CopyAuditStore(east, shared).ok());
  Result<CopySummary> second = CopyAuditStore(west, shared);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  const std::vector<RunRow> runs = Runs(shared);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run.name, "east");
  EXPECT_EQ(runs[1].run.name, "west");
  // West's decisions and run have new ids in the shared database (JSON and
  // FOCUS show them); east, copied first, keeps its own.
  for (const auto& [cluster, file, formats] :
       {std::tuple{"east", east, std::vector<const char*>{"csv", "focus", "json"}},
        std::tuple{"west", west, std::vector<const char*>{"csv"}}}) {
    for (const char* format : formats) {
      SCOPED_TRACE(std::string(cluster) + " " + format);
      const Params params = {{"run", cluster}, {"format", format}, {"group_by", "class,team"}};
      const std::string own = Render(file, params);
      ASSERT_FALSE(own.empty());
      EXPECT_EQ(own, Render(shared, params));
    }
  }
  EXPECT_NE(Render(shared, {{"run", "east"}, {"format", "csv"}}),
            Render(shared, {{"run", "west"}, {"format", "csv"}}));
}

// The copy moves what the schema holds, read from the schema itself: every
// table but the target's own, every column, every row. Copied into an empty
// database even the made ids are the source's.
TEST_F(PostgresCopy, EveryTableAndColumnOfTheSchemaArrivesWhole) {
  const std::string sqlite = Store("east");
  const std::string postgres = databases_.Get("whole");
  Result<CopySummary> copied = CopyAuditStore(sqlite, postgres);
  ASSERT_TRUE(copied.ok()) << copied.error().ToString();
  Result<std::shared_ptr<store_internal::Connection>> from =
      store_internal::Connection::Open(sqlite, SQLITE_OPEN_READONLY, std::chrono::seconds(5));
  ASSERT_TRUE(from.ok()) << from.error().ToString();
  Result<std::shared_ptr<store_internal::PostgresConnection>> to =
      store_internal::PostgresConnection::Connect({.url = postgres, .read_only = true});
  ASSERT_TRUE(to.ok()) << to.error().ToString();
  Result<store_internal::Query> tables =
      (*from)->Prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  ASSERT_TRUE(tables.ok()) << tables.error().ToString();
  const std::set<std::string> targets_own = {"schema_version", "installation", "leadership", "rollup_state"};
  std::vector<std::string> names;
  for (Result<bool> more = tables->Step("listing tables"); more.ok() && *more;
       more = tables->Step("listing tables"))
    names.push_back(tables->Text(0));
  ASSERT_GT(names.size(), 10u);
  int filled = 0;
  for (const std::string& table : names) {
    if (targets_own.count(table)) {
      EXPECT_EQ(copied->rows.count(table), 0u) << table << " is the target's own";
      continue;
    }
    ASSERT_EQ(copied->rows.count(table), 1u) << "table " << table << " was not copied";
    Result<store_internal::Query> info =
        (*from)->Prepare("SELECT name, upper(type) FROM pragma_table_info(?1) ORDER BY cid");
    ASSERT_TRUE(info.ok()) << info.error().ToString();
    info->Bind(1, table);
    std::vector<std::string> columns, types;
    for (Result<bool> more = info->Step("columns"); more.ok() && *more; more = info->Step("columns")) {
      columns.push_back(info->Text(0));
      types.push_back(info->Text(1));
    }
    const std::vector<std::string> source = SortedRows(**from, table, columns, types);
    const std::vector<std::string> target = SortedRows(**to, table, columns, types);
    EXPECT_EQ(copied->rows.at(table), static_cast<int64_t>(source.size())) << table;
    EXPECT_EQ(source, target) << "table " << table << " differs after the copy";
    filled += source.empty() ? 0 : 1;
  }
  EXPECT_GE(filled, 6) << "the demo store fills too few tables for this test to mean much";
}

// A cluster's learned state is copied when the target has none for it, and
// kept when it has (its controller runs there now: the target's is newer).
TEST_F(PostgresCopy, LearnedStateIsCopiedUnlessTheTargetHasTheClustersOwn) {
  const std::string east = scratch_.File("east-learned.db"), west = scratch_.File("west-learned.db");
  WriteClusterStore(east, "east", 2.5);
  WriteClusterStore(west, "west", 3.25);
  const std::string shared = databases_.Get("learned");
  for (const auto& [path, cluster] : {std::pair{east, "east"}, std::pair{west, "west"}}) {
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ASSERT_TRUE(
        (*store)->SaveLearnedState(cluster, testing_store::T(1'800'000'100), "{\"from\":\"file\"}").ok());
  }
  {
    Result<std::unique_ptr<SqliteAuditStore>> target = SqliteAuditStore::Open(shared);
    ASSERT_TRUE(target.ok()) << target.error().ToString();
    ASSERT_TRUE(
        (*target)->SaveLearnedState("west", testing_store::T(1'800'000'200), "{\"from\":\"target\"}").ok());
  }
  ASSERT_TRUE(CopyAuditStore(east, shared).ok());
  Result<CopySummary> second = CopyAuditStore(west, shared);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  Result<std::unique_ptr<SqliteAuditStore>> target = SqliteAuditStore::Open(shared);
  ASSERT_TRUE(target.ok()) << target.error().ToString();
  Result<std::optional<std::string>> copied = (*target)->LearnedState("east");
  Result<std::optional<std::string>> kept = (*target)->LearnedState("west");
  ASSERT_TRUE(copied.ok() && kept.ok());
  EXPECT_EQ(copied->value_or("none"), "{\"from\":\"file\"}");
  EXPECT_EQ(kept->value_or("none"), "{\"from\":\"target\"}");
}

}  // namespace
}  // namespace gpuscaler::report::postgres_copy_test
