// A run recorded in SQLite and copied to PostgreSQL (`gpuscaler db copy`)
// reports byte for byte the same in every format; two clusters' stores
// copied into one database stay apart, and the same store is not copied
// twice.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/copy.h"
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
  const std::string postgres = databases_.Get("east");
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
      EXPECT_TRUE(from_sqlite == Render(postgres, params)) << "the reports differ";
    }
  }
}

TEST_F(PostgresCopy, TwoClustersShareADatabaseApartAndAStoreIsNotCopiedTwice) {
  const std::string east = Store("east");
  const std::string west = Store("west");
  const std::string shared = databases_.Get("fleet");
  ASSERT_TRUE(CopyAuditStore(east, shared).ok());
  Result<CopySummary> again = CopyAuditStore(east, shared);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().category(), ErrorCategory::kInvalidInput) << again.error().ToString();
  Result<CopySummary> second = CopyAuditStore(west, shared);
  ASSERT_TRUE(second.ok()) << second.error().ToString();

  const std::vector<RunRow> east_runs = Runs(east), west_runs = Runs(west), all = Runs(shared);
  ASSERT_EQ(all.size(), east_runs.size() + west_runs.size());
  // West's runs follow east's, with new ids; each reports as from its own file.
  for (size_t i = 0; i < west_runs.size(); ++i) {
    const RunRow& copied = all[east_runs.size() + i];
    SCOPED_TRACE(copied.run.name);
    EXPECT_EQ(copied.run.name, west_runs[i].run.name);
    const Params params = {{"format", "csv"}, {"group_by", "class,team"}};
    Params in_file = params, in_shared = params;
    in_file["run"] = std::to_string(west_runs[i].id);
    in_shared["run"] = std::to_string(copied.id);
    EXPECT_EQ(Render(west, in_file), Render(shared, in_shared));
  }
}

}  // namespace
}  // namespace gpuscaler::report::postgres_copy_test
