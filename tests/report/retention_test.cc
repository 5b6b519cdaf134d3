// Retention: a year of audit rows (written straight into the store) is
// pruned in bounded batches after its months are rolled up, and reports give
// the same totals for every month before and after.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <string>

#include "gpuscaler/report/report.h"
#include "gpuscaler/report/retention.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

using testing::MakeOffering;
using testing::T;
using testing::TempDir;

constexpr int kNodesPerMonth = 12;

// 2026: each month, kNodesPerMonth nodes that live 9 days (one spot, with a
// price change), with a usage row every 6 hours (half of the node's GPUs),
// a decision each, and a price sample a day.
void WriteAYear(SqliteAuditStore& store, const std::string& cluster = "prod") {
  ASSERT_TRUE(store.BeginRun({cluster, "daemon", "h", T("2026-01-01T00:00:00Z")}).ok());
  ASSERT_TRUE(store.BeginTick().ok());
  int serial = 0;
  for (int month = 1; month <= 12; ++month) {
    char start_text[32];
    std::snprintf(start_text, sizeof start_text, "2026-%02d-03T00:00:00Z", month);
    const WallTime month_start = T(start_text);
    for (int i = 0; i < kNodesPerMonth; ++i) {
      const WallTime launch = month_start + Seconds(3600 * 7 * i);
      DecisionRecord d;
      d.time = launch;
      d.policy_name = "p";
      d.policy_hash = "h";
      Result<int64_t> id = store.RecordDecision(d);
      ASSERT_TRUE(id.ok());
      NodeLaunchRecord n;
      n.instance_id = cluster + "-i-" + std::to_string(serial++);
      n.node_id = n.instance_id;
      n.pool = i % 2 == 0 ? "gpu-od" : "gpu-spot";
      n.offering = i % 2 == 0 ? MakeOffering("g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, 5.672, 5.672)
                              : MakeOffering("g5.12xlarge", "us-east-1b", CapacityType::kSpot, 2.0, 5.672);
      n.gpu_count = 4;
      n.launch_time = launch;
      n.decision_id = *id;
      ASSERT_TRUE(store.RecordNodeLaunch(n).ok());
      if (i % 2 == 1) {
        ASSERT_TRUE(store.RecordNodePrice(n.instance_id, launch + Seconds(86400), 2.5).ok());
      }
      const WallTime end = launch + Seconds(9 * 86400);
      std::vector<UsageRecord> usage;
      for (WallTime t = launch; t < end; t += Seconds(6 * 3600)) {
        UsageRecord u;
        u.instance_id = n.instance_id;
        u.workload_class = i % 3 == 0 ? "training" : "inference";
        u.team = i % 3 == 0 ? "research" : "search";
        u.start = t;
        u.end = t + Seconds(6 * 3600);
        u.gpu_seconds_allocated = 2.0 * 6 * 3600;
        u.gpu_seconds_busy = u.gpu_seconds_allocated * 0.5;
        usage.push_back(u);
      }
      ASSERT_TRUE(store.RecordUsage(usage).ok());
      ASSERT_TRUE(store.RecordNodeEnd({n.instance_id, end, "terminated"}).ok());
    }
    for (int day = 0; day < 28; ++day) {
      PriceSample p;
      p.time = month_start + Seconds(86400 * day);
      p.offering = MakeOffering("g5.12xlarge", "us-east-1b", CapacityType::kSpot, 2.0, 5.672);
      ASSERT_TRUE(store.RecordPriceSamples({p}).ok());
    }
  }
  ASSERT_TRUE(store.CommitTick().ok());
}

// cost_usd of each month of 2026 and of the whole year, in cents (of one
// cluster's run when `run` is given).
std::vector<int64_t> MonthlyCents(const std::string& db, const std::string& run = "") {
  std::vector<int64_t> out;
  for (int month = 1; month <= 13; ++month) {
    char from[32], to[32];
    std::snprintf(from, sizeof from, "2026-%02d-01", month == 13 ? 1 : month);
    std::snprintf(to, sizeof to, month >= 12 ? "2027-01-01" : "2026-%02d-01", month + 1);
    std::map<std::string, std::string> params = {{"from", from}, {"to", to}, {"format", "json"}};
    if (!run.empty()) params["run"] = run;
    Result<ReportQuery> q = ParseReportQuery(params);
    EXPECT_TRUE(q.ok()) << q.error().ToString();
    if (!q.ok()) return out;
    q->db_path = db;
    Result<RenderedReport> r = RenderReport(*q);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (!r.ok()) return out;
    out.push_back(std::llround(nlohmann::json::parse(r->body)["totals"]["cost_usd"].get<double>() * 100));
  }
  return out;
}

int64_t Count(SqliteAuditStore& store, const char* table) {
  std::unique_ptr<AuditReader> reader = std::move(store.OpenReader()).value();
  if (std::string(table) == "usage") {
    return static_cast<int64_t>(std::move(reader->UsageOverlapping(T("2000-01-01"), T("2100-01-01"))).value().size());
  }
  return static_cast<int64_t>(std::move(reader->NodesOverlapping(T("2000-01-01"), T("2100-01-01"))).value().size());
}

TEST(Retention, AYearIsPrunedInBoundedBatchesAndEveryMonthKeepsItsTotal) {
  TempDir dir;
  const std::string db = dir.File("audit.db");
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(db)).value();
  WriteAYear(*store);
  const std::vector<int64_t> before = MonthlyCents(db);
  ASSERT_EQ(before.size(), 13u);
  for (size_t m = 0; m < 12; ++m) EXPECT_GT(before[m], 0) << "month " << m + 1;
  const int64_t usage_before = Count(*store, "usage");
  const int64_t nodes_before = Count(*store, "nodes");

  // Keep 60 days as of 2027-01-10: detail before 2026-11-01 goes.
  constexpr int kBatch = 100;
  RetentionPruner pruner(*store, Seconds(60 * 86400), kBatch);
  int steps = 0;
  int64_t pruned = 0;
  while (!pruner.idle() && steps < 10000) {
    Result<int64_t> n = pruner.Step(T("2027-01-10T00:00:00Z"));
    ASSERT_TRUE(n.ok()) << n.error().ToString();
    EXPECT_LE(*n, kBatch);
    pruned += *n;
    ++steps;
  }
  ASSERT_TRUE(pruner.idle()) << "pruning did not finish in " << steps << " steps";
  // Idle until the cut moves; a month later it rolls up and prunes again.
  EXPECT_EQ(std::move(pruner.Step(T("2027-01-20T00:00:00Z"))).value(), 0);
  EXPECT_TRUE(pruner.idle());
  EXPECT_GT(pruned, 0);
  // Usage rows of nodes that ended before November are gone, and the nodes.
  const int64_t usage_after = Count(*store, "usage");
  const int64_t nodes_after = Count(*store, "nodes");
  EXPECT_LT(usage_after, usage_before / 4) << usage_before << " -> " << usage_after;
  EXPECT_EQ(nodes_after, 2 * kNodesPerMonth) << "November's and December's nodes stay";
  (void)nodes_before;

  const std::vector<int64_t> after = MonthlyCents(db);
  ASSERT_EQ(after.size(), before.size());
  for (size_t m = 0; m < before.size(); ++m) EXPECT_EQ(after[m], before[m]) << (m < 12 ? "month " : "year ") << m + 1;
  // A pruned month is read from its rollup, and says so.
  Result<ReportQuery> q = ParseReportQuery({{"from", "2026-03-01"}, {"to", "2026-04-01"}, {"format", "json"}});
  ASSERT_TRUE(q.ok());
  q->db_path = db;
  const nlohmann::json march = nlohmann::json::parse(std::move(RenderReport(*q)).value().body);
  ASSERT_FALSE(march["warnings"].empty());
  EXPECT_NE(march["warnings"][0].get<std::string>().find("monthly rollups"), std::string::npos) << march["warnings"];
  // A month later the cut moves: November is rolled up and pruned too.
  int later_steps = 0;
  do {
    ASSERT_TRUE(pruner.Step(T("2027-02-10T00:00:00Z")).ok());
  } while (!pruner.idle() && ++later_steps < 10000);
  EXPECT_EQ(Count(*store, "nodes"), kNodesPerMonth) << "December's nodes stay";
  EXPECT_EQ(MonthlyCents(db), before);
  ::testing::Test::RecordProperty("steps", steps);
  ::testing::Test::RecordProperty("rows_pruned", static_cast<int>(pruned));
  ::testing::Test::RecordProperty("usage_rows", std::to_string(usage_before) + " -> " + std::to_string(usage_after));
  EXPECT_EQ(std::move(store->IntegrityCheck()).value(), "ok");
}

// Two clusters share one database (PostgreSQL in production): one's
// retention rolls up both clusters' months before it prunes, so each
// cluster's monthly cost is kept (docs/audit-schema.md, "Retention").
TEST(Retention, OneClustersPruneKeepsTheOtherClustersMonthlyCost) {
  TempDir dir;
  const std::string db = dir.File("audit.db");
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(db)).value();
  WriteAYear(*store, "prod");
  WriteAYear(*store, "staging");
  const std::vector<int64_t> prod = MonthlyCents(db, "prod");
  const std::vector<int64_t> staging = MonthlyCents(db, "staging");
  ASSERT_EQ(prod.size(), 13u);
  ASSERT_GT(staging.back(), 0);
  RetentionPruner pruner(*store, Seconds(60 * 86400), 500);
  for (int steps = 0; !pruner.idle() && steps < 10000; ++steps) {
    ASSERT_TRUE(pruner.Step(T("2027-01-10T00:00:00Z")).ok());
  }
  ASSERT_TRUE(pruner.idle());
  EXPECT_EQ(Count(*store, "nodes"), 2 * 2 * kNodesPerMonth) << "November's and December's, of both clusters";
  EXPECT_EQ(MonthlyCents(db, "prod"), prod);
  EXPECT_EQ(MonthlyCents(db, "staging"), staging);
}

TEST(Retention, NothingIsPrunedBeforeItsMonthIsRolledUp) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  WriteAYear(*store);
  Result<int64_t> n = store->PruneBatch(T("2027-01-01"), 500);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(store->PruneBatch(T("2027-01-01"), 0).error().category(), ErrorCategory::kInvalidInput);
}

}  // namespace
}  // namespace gpuscaler::report
