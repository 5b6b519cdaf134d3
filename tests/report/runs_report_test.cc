// Reports over a database holding several runs: one run is chosen by name or
// id (or all together, on request), the range defaults to the run's life
// (a daemon run's: its calendar month), and the header says what it covers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpuscaler/report/report.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

using testing::MakeOffering;
using testing::T;
using testing::TempDir;

// One run with one on-demand node of `usd_per_hour` (1 GPU) from `start`
// for `hours`, fully allocated to class "c" for its life.
void WriteRun(SqliteAuditStore& store, const std::string& name, const std::string& source, const char* start,
              int hours, double usd_per_hour, const std::string& instance_id) {
  ASSERT_TRUE(store.BeginRun({name, source, "hash", T(start)}).ok());
  NodeLaunchRecord n;
  n.instance_id = instance_id;
  n.node_id = instance_id;
  n.pool = "gpu";
  n.offering = MakeOffering("g5.xlarge", "us-east-1a", CapacityType::kOnDemand, usd_per_hour, usd_per_hour);
  n.gpu_count = 1;
  n.launch_time = T(start);
  ASSERT_TRUE(store.RecordNodeLaunch(n).ok());
  const WallTime end = T(start) + Seconds(3600 * hours);
  ASSERT_TRUE(store.RecordNodeEnd({instance_id, end, "terminated"}).ok());
  UsageRecord u;
  u.instance_id = instance_id;
  u.workload_class = "c";
  u.start = T(start);
  u.end = end;
  u.gpu_seconds_allocated = 3600.0 * hours;
  ASSERT_TRUE(store.RecordUsage({u}).ok());
  ASSERT_TRUE(store.EndRun(end).ok());
}

class RunsReport : public ::testing::Test {
 protected:
  void SetUp() override {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(db_)).value();
    WriteRun(*store, "on-demand", "sim", "2026-07-06T00:00:00Z", 10, 4.0, "i-od");
    WriteRun(*store, "gpuscaler", "sim", "2026-07-06T00:00:00Z", 10, 1.5, "i-gs");
  }
  Result<RenderedReport> Render(std::map<std::string, std::string> params) {
    params["format"] = "json";
    Result<ReportQuery> q = ParseReportQuery(params);
    if (!q) return q.error();
    q->db_path = db_;
    return RenderReport(*q);
  }
  TempDir dir_;
  std::string db_ = dir_.File("audit.db");
};

TEST_F(RunsReport, SeveralRunsWithoutRunIsAnErrorListingThem) {
  Result<RenderedReport> r = Render({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kInvalidInput);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("holds 2 runs"), std::string::npos) << m;
  EXPECT_NE(m.find("'on-demand' (id 1, sim, started 2026-07-06T00:00:00Z, ended 2026-07-06T10:00:00Z)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("'gpuscaler' (id 2, sim"), std::string::npos) << m;
  EXPECT_NE(m.find("--all-runs"), std::string::npos) << m;
}

TEST_F(RunsReport, ARunByNameOrIdCoversThatRunOnlyOverItsWholeLife) {
  for (const char* run : {"gpuscaler", "2"}) {
    SCOPED_TRACE(run);
    Result<RenderedReport> r = Render({{"run", run}});
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    const nlohmann::json j = nlohmann::json::parse(r->body);
    EXPECT_DOUBLE_EQ(j["totals"]["cost_usd"].get<double>(), 15.0);
    EXPECT_EQ(j["query"]["from"], "2026-07-06T00:00:00Z");
    EXPECT_EQ(j["query"]["to"], "2026-07-06T10:00:01Z");
    const std::string scope = j["query"]["scope"];
    EXPECT_NE(scope.find("run 'gpuscaler' (id 2, sim"), std::string::npos) << scope;
    EXPECT_NE(scope.find("the whole run"), std::string::npos) << scope;
    EXPECT_EQ(r->scope, scope);
    EXPECT_TRUE(r->notices.empty());
  }
}

TEST_F(RunsReport, BusyTimeNotMeasuredIsShownAsSuchNotAsAllocated) {
  Result<RenderedReport> r = Render({{"run", "gpuscaler"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_DOUBLE_EQ(j["totals"]["gpu_hours_allocated"].get<double>(), 10.0);
  EXPECT_TRUE(j["totals"]["gpu_hours_busy"].is_null()) << j["totals"];
  EXPECT_TRUE(j["totals"]["gpu_hours_allocated_idle"].is_null()) << j["totals"];
  ASSERT_FALSE(j["allocation"].empty());
  EXPECT_TRUE(j["allocation"][0]["gpu_hours_busy"].is_null()) << j["allocation"][0];
  bool warned = false;
  for (const auto& w : j["warnings"]) warned |= w.get<std::string>().find("busy time not measured") == 0;
  EXPECT_TRUE(warned) << j["warnings"];

  Result<ReportQuery> html = ParseReportQuery({{"run", "gpuscaler"}, {"format", "html"}});
  ASSERT_TRUE(html.ok());
  html->db_path = db_;
  Result<RenderedReport> page = RenderReport(*html);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->body.find("not measured"), std::string::npos);
}

TEST_F(RunsReport, AllRunsAddsThemUpAndSaysSo) {
  Result<RenderedReport> r = Render({{"all_runs", "true"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_DOUBLE_EQ(j["totals"]["cost_usd"].get<double>(), 55.0);
  EXPECT_NE(j["query"]["scope"].get<std::string>().find("all 2 runs"), std::string::npos);
}

TEST_F(RunsReport, AnUnknownRunIsAnErrorListingTheRuns) {
  Result<RenderedReport> r = Render({{"run", "karpenter"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kInvalidInput);
  EXPECT_NE(r.error().message().find("no run 'karpenter'"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("'gpuscaler' (id 2"), std::string::npos) << r.error().message();
}

TEST_F(RunsReport, AGivenBoundWinsAndARangeWithoutDataSaysSo) {
  Result<RenderedReport> r = Render({{"run", "gpuscaler"}, {"from", "2026-07-06T05:00:00Z"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_NEAR(j["totals"]["cost_usd"].get<double>(), 7.5, 1e-9);
  EXPECT_NE(j["query"]["scope"].get<std::string>().find("as given, the other bound the whole run"), std::string::npos);

  r = Render({{"run", "gpuscaler"}, {"from", "2026-08-01"}, {"to", "2026-08-02"}});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->notices.size(), 1u);
  EXPECT_NE(r->notices[0].find("no nodes or usage recorded in run 'gpuscaler'"), std::string::npos) << r->notices[0];
  // The warning names the data's own time range; a window wholly outside
  // it is flagged (the CLI exits 3).
  EXPECT_NE(r->notices[0].find("; the data covers 2026-07-"), std::string::npos) << r->notices[0];
  EXPECT_TRUE(r->range_outside_data);
}

TEST(RunsReportDaemon, ADaemonRunDefaultsToTheCalendarMonthOfNow) {
  TempDir dir;
  const std::string db = dir.File("daemon.db");
  {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(db)).value();
    WriteRun(*store, "prod", "daemon", "2026-10-31T20:00:00Z", 8, 1.0, "i-1");
  }
  Result<ReportQuery> q = ParseReportQuery({{"format", "json"}});
  ASSERT_TRUE(q.ok());
  q->db_path = db;
  q->now = T("2026-11-15T00:00:00Z");
  Result<RenderedReport> r = RenderReport(*q);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["query"]["from"], "2026-11-01T00:00:00Z");
  EXPECT_EQ(j["query"]["to"], "2026-12-01T00:00:00Z");
  EXPECT_NEAR(j["totals"]["cost_usd"].get<double>(), 4.0, 1e-9);  // 00:00 to 04:00 on 11-01
  EXPECT_NE(j["query"]["scope"].get<std::string>().find("calendar month (UTC) of 2026-11-15"), std::string::npos);

  // Weeks later, with nothing recorded since: the month of the last record,
  // not an empty one.
  q->now = T("2026-12-04T00:00:00Z");
  r = RenderReport(*q);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const nlohmann::json later = nlohmann::json::parse(r->body);
  EXPECT_EQ(later["query"]["from"], "2026-11-01T00:00:00Z");
  EXPECT_EQ(later["query"]["to"], "2026-12-01T00:00:00Z");
  EXPECT_NEAR(later["totals"]["cost_usd"].get<double>(), 4.0, 1e-9);
  EXPECT_NE(later["query"]["scope"].get<std::string>().find("calendar month (UTC) of the last record"),
            std::string::npos)
      << later["query"]["scope"];
  EXPECT_TRUE(r->notices.empty());
  EXPECT_FALSE(r->range_outside_data);
}

}  // namespace
}  // namespace gpuscaler::report
