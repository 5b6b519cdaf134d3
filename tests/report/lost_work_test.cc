// Work lost to interruptions in reports: the figure the store recorded per
// interruption, attributed to its class and team; the fixed loss window
// only for nodes without one (stores before schema version 6, runs whose
// work source measures no losses).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/report/report.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report_test_util.h"
#include "src/store/schema.h"
#include "src/store/sqlite_db.h"

namespace gpuscaler::report {
namespace {

using testing::MakeOffering;
using testing::T;
using testing::TempDir;

// A spot g5.12xlarge (4 GPUs, $2/h) 01:00 -> 03:00, interrupted; class
// "training" (no team: team_map makes it "research") holds 3 GPUs all along.
constexpr double kPricePerGpuSecond = 2.0 / 4 / 3600;
constexpr double kWindowGpuSeconds = 900.0 * 3;  // the default window at 3 GPUs

void WriteInterruptedNode(SqliteAuditStore& store, const std::vector<LostWorkRecord>& lost) {
  ASSERT_TRUE(store.BeginRun({"replay", "sim", "h", T("2026-11-02T00:00:00Z")}).ok());
  NodeLaunchRecord n;
  n.instance_id = "i-spot";
  n.node_id = "node-spot";
  n.pool = "gpu-spot";
  n.offering = MakeOffering("g5.12xlarge", "us-east-1b", CapacityType::kSpot, 2.0, 5.672);
  n.gpu_count = 4;
  n.launch_time = T("2026-11-02T01:00:00Z");
  ASSERT_TRUE(store.RecordNodeLaunch(n).ok());
  ASSERT_TRUE(store.RecordNodeEnd({"i-spot", T("2026-11-02T03:00:00Z"), "interrupted"}).ok());
  UsageRecord u;
  u.instance_id = "i-spot";
  u.workload_class = "training";
  u.start = T("2026-11-02T01:00:00Z");
  u.end = T("2026-11-02T03:00:00Z");
  u.gpu_seconds_allocated = 3 * 7200.0;
  ASSERT_TRUE(store.RecordUsage({u}).ok());
  ASSERT_TRUE(store.RecordLostWork(lost).ok());
  ASSERT_TRUE(store.EndRun(T("2026-11-02T03:00:00Z")).ok());
}

class LostWorkReport : public ::testing::Test {
 protected:
  nlohmann::json Json(const std::string& db) {
    Result<ReportQuery> q = ParseReportQuery({{"format", "json"}, {"team_map", "training=research"}});
    EXPECT_TRUE(q.ok());
    q->db_path = db;
    Result<RenderedReport> r = RenderReport(*q);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? nlohmann::json::parse(r->body) : nlohmann::json();
  }
  // The allocation view's lost GPU-hours of (class, team); nullopt: no row.
  static std::optional<double> LostOf(const nlohmann::json& j, const std::string& cls, const std::string& team) {
    for (const nlohmann::json& row : j["allocation"]) {
      if (row["class"] == cls && row["team"] == team) return row["gpu_hours_lost"].get<double>();
    }
    return std::nullopt;
  }
  std::string Store(const std::string& name, const std::vector<LostWorkRecord>& lost) {
    const std::string path = dir_.File(name);
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(path)).value();
    WriteInterruptedNode(*store, lost);
    return path;
  }
  TempDir dir_;
};

TEST_F(LostWorkReport, TheRecordedLossIsReportedForItsClassAndTeamInsteadOfTheWindow) {
  const WallTime at = T("2026-11-02T03:00:00Z");
  const nlohmann::json j = Json(Store("recorded.db", {LostWorkRecord{"i-spot", at, "training", "", 1800},
                                                       LostWorkRecord{"i-spot", at, "eval", "qa", 600}}));
  EXPECT_NEAR(j["totals"]["gpu_hours_lost"].get<double>(), 2400.0 / 3600, 1e-3);
  EXPECT_NEAR(j["totals"]["lost_usd"].get<double>(), 2400 * kPricePerGpuSecond, 0.006);
  // The team as usage's: the team_map fills in a record without one.
  EXPECT_NEAR(LostOf(j, "training", "research").value_or(-1), 0.5, 1e-3);
  // A class that lost work on a day it has no usage on the node still shows it.
  EXPECT_NEAR(LostOf(j, "eval", "qa").value_or(-1), 600.0 / 3600, 1e-3);
  // The node's own total.
  ASSERT_EQ(j["top_nodes"].size(), 1u);
  EXPECT_NEAR(j["top_nodes"][0]["gpu_hours_lost"].get<double>(), 2400.0 / 3600, 1e-3);
}

TEST_F(LostWorkReport, ANodeRecordedAsLosingNothingLosesNothing) {
  const nlohmann::json j =
      Json(Store("nothing.db", {LostWorkRecord{"i-spot", T("2026-11-02T03:00:00Z"), "", "", 0}}));
  EXPECT_EQ(j["totals"]["gpu_hours_lost"].get<double>(), 0);
  EXPECT_EQ(j["totals"]["interrupted_nodes"].get<int>(), 1);
}

// A node without a record (here a run whose source measured none) keeps the
// documented estimate: the GPU-seconds allocated in the window before it.
TEST_F(LostWorkReport, ANodeWithoutARecordFallsBackToTheLossWindow) {
  const nlohmann::json j = Json(Store("unrecorded.db", {}));
  EXPECT_NEAR(j["totals"]["gpu_hours_lost"].get<double>(), kWindowGpuSeconds / 3600, 1e-3);
  EXPECT_NEAR(j["totals"]["lost_usd"].get<double>(), kWindowGpuSeconds * kPricePerGpuSecond, 0.006);
}

// A store written before schema version 6 has no lost_work table: the
// report reads it as it is, every interruption with the window.
TEST_F(LostWorkReport, AStoreFromBeforeLostWorkWasRecordedFallsBackToTheLossWindow) {
  const std::string path = dir_.File("v5.db");
  {
    std::shared_ptr<store_internal::Connection> db =
        std::move(store_internal::Connection::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                                   std::chrono::milliseconds(100)))
            .value();
    ASSERT_TRUE(store_internal::Migrate(*db, store_internal::AuditMigrations().first(5)).ok());
    for (const char* sql : {
             "INSERT INTO runs (name, source, policy_hash, started, ended) "
             "VALUES ('replay', 'sim', 'h', 1793577600, 1793588400)",
             "INSERT INTO nodes (instance_id, node_id, pool, instance_type, region, zone, capacity_type, "
             "launch_usd_per_hour, on_demand_usd_per_hour, interruptions_per_hour, gpu_count, launch_time, end_time, "
             "reason, cause, run_id) VALUES ('i-spot', 'node-spot', 'gpu-spot', 'g5.12xlarge', 'us-east-1', "
             "'us-east-1b', 'spot', 2.0, 5.672, 0.05, 4, 1793581200, 1793588400, 'r', 'interrupted', 1)",
             "INSERT INTO node_prices (instance_id, from_time, usd_per_hour) VALUES ('i-spot', 1793581200, 2.0)",
             "INSERT INTO usage (end_time, instance_id, workload_class, team, start_time, gpu_seconds_allocated, "
             "gpu_seconds_busy, run_id) VALUES (1793588400, 'i-spot', 'training', '', 1793581200, 21600, NULL, 1)",
         }) {
      ASSERT_TRUE(db->Exec(sql, "writing a version-5 store").ok()) << sql;
    }
  }
  ASSERT_EQ(T("2026-11-02T01:00:00Z"), FromUnixSeconds(1793581200));
  const nlohmann::json j = Json(path);
  EXPECT_NEAR(j["totals"]["gpu_hours_lost"].get<double>(), kWindowGpuSeconds / 3600, 1e-3);
  EXPECT_NEAR(LostOf(j, "training", "research").value_or(-1), kWindowGpuSeconds / 3600, 1e-3);
}

}  // namespace
}  // namespace gpuscaler::report
