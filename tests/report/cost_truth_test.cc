// Cost truth: a seeded 30-day simulation writes its audit database through
// the production controller; the report, reading only that database, must
// agree with the simulated cloud's bills (within 0.01 %), and attributed +
// idle must equal the total to the cent.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <map>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report_test_util.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::report {
namespace {

constexpr uint64_t kSeed = 7;
constexpr int kDays = 30;

TEST(CostTruth, ThirtyDaySimulationReportEqualsTheSimulatedBills) {
  const auto started = std::chrono::steady_clock::now();
  std::string catalog_source;
  const Catalog catalog = DefaultCatalog(GPUSCALER_SOURCE_DIR, &catalog_source);
  Result<sim::Scenario> scenario = sim::MakeBuiltinScenario("demo", kSeed, kDays, catalog);
  ASSERT_TRUE(scenario.ok()) << scenario.error().ToString();
  Result<sim::RunSpec> spec = sim::MakeRunSpec("gpuscaler", *scenario, nullptr);
  ASSERT_TRUE(spec.ok());

  testing::TempDir dir;
  const std::string db = dir.File("audit.db");
  sim::RunResult run;
  {
    SqliteAuditStoreOptions so;
    so.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick;
    so.group_commit_ticks = 64;
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(db, so);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    sim::RunOptions options;
    options.store = store->get();
    run = sim::RunScenario(*scenario, *spec, options);
    ASSERT_TRUE((*store)->Flush().ok());
  }
  ASSERT_EQ(run.controller_errors, 0);
  ASSERT_GT(run.interruptions, 0) << "the scenario should exercise interruptions (seed " << kSeed << ")";
  double bills = 0;
  std::map<std::string, double> bill_by_instance;
  for (const sim::InstanceBill& b : run.bills) {
    bills += b.usd;
    bill_by_instance[b.instance_id] = b.usd;
  }
  ASSERT_NEAR(bills, run.total_cost_usd, 1e-6);
  ASSERT_GT(bills, 0);

  const WallTime from = scenario->start;
  const WallTime to = scenario->start + scenario->horizon;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db);
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  ReportQuery query;
  query.from = from;
  query.to = to;
  query.format = Format::kJson;
  query.group_by = {Dimension::kClass, Dimension::kCapacityType};
  Result<CostFacts> facts = BuildCostFacts(**reader, query);
  ASSERT_TRUE(facts.ok()) << facts.error().ToString();

  // Per node first, so a disagreement names the instance.
  int price_changed_nodes = 0;
  for (const NodeFact& n : facts->nodes) {
    auto it = bill_by_instance.find(n.instance_id);
    ASSERT_NE(it, bill_by_instance.end()) << n.instance_id << " is in the store but the cloud never billed it";
    EXPECT_NEAR(n.m.cost_usd, it->second, 1e-6 + 1e-9 * it->second) << n.instance_id;
    price_changed_nodes += n.price_changes > 0 ? 1 : 0;
  }
  EXPECT_EQ(facts->nodes.size(), run.bills.size());
  EXPECT_GT(price_changed_nodes, 0) << "no node saw a spot price change: piecewise billing untested";
  const double deviation = std::fabs(facts->total.cost_usd - bills) / bills;
  EXPECT_LE(deviation, 1e-4) << "report " << facts->total.cost_usd << " vs bills " << bills;
  EXPECT_NEAR(facts->total.cost_usd, bills, 0.005);  // in fact to the cent
  for (const auto& [ct, usd] : run.cost_by_capacity_type) {
    double mine = 0;
    for (const NodeFact& n : facts->nodes) mine += ToString(n.capacity_type) == ct ? n.m.cost_usd : 0;
    EXPECT_NEAR(mine, usd, 1e-6 * std::max(1.0, usd)) << ct;
  }
  EXPECT_NEAR(facts->total.gpu_seconds_paid / 3600.0, run.paid_gpu_hours, 1e-6 * run.paid_gpu_hours);
  // Busy time is measured on every row (the jobs' GPU time) and adds up to
  // what the workload model counted.
  EXPECT_NEAR(facts->total.gpu_seconds_busy_measured, facts->total.gpu_seconds_allocated,
              1e-9 * facts->total.gpu_seconds_allocated);
  EXPECT_NEAR(facts->total.gpu_seconds_busy / 3600.0, run.busy_gpu_hours, 1e-6 * run.busy_gpu_hours);

  // Two readers splitting the usage scan agree with one.
  Result<std::unique_ptr<AuditReader>> second = AuditReader::Open(db);
  ASSERT_TRUE(second.ok());
  Result<CostFacts> split = BuildCostFacts(**reader, query, second->get());
  ASSERT_TRUE(split.ok()) << split.error().ToString();
  EXPECT_NEAR(split->total.cost_usd, facts->total.cost_usd, 1e-9 * bills);
  EXPECT_NEAR(split->total.idle_usd, facts->total.idle_usd, 1e-9 * bills);
  EXPECT_NEAR(split->total.gpu_seconds_busy, facts->total.gpu_seconds_busy, 1e-9 * facts->total.gpu_seconds_busy);
  EXPECT_EQ(split->usage_rows, facts->usage_rows);
  EXPECT_EQ(split->lines.size(), facts->lines.size());

  // The rendered report: attributed + idle == total, to the cent, in every
  // table that partitions the total.
  Result<RenderedReport> rendered = RenderReport(**reader, query);
  ASSERT_TRUE(rendered.ok());
  const nlohmann::json j = nlohmann::json::parse(rendered->body);
  const auto cents = [](const nlohmann::json& v) { return std::llround(v.get<double>() * 100); };
  const int64_t total = cents(j["totals"]["cost_usd"]);
  EXPECT_EQ(total, std::llround(facts->total.cost_usd * 100));
  EXPECT_EQ(cents(j["totals"]["attributed_usd"]) + cents(j["totals"]["idle_usd"]), total);
  int64_t allocation = 0, costs = 0;
  for (const auto& row : j["allocation"]) allocation += cents(row["cost_usd"]);
  for (const auto& row : j["costs"]) costs += cents(row["cost_usd"]);
  EXPECT_EQ(allocation, total);
  EXPECT_EQ(costs, total);
  EXPECT_GT(cents(j["totals"]["idle_usd"]), 0);
  EXPECT_GT(j["totals"]["gpu_hours_lost"].get<double>(), 0);
  ASSERT_FALSE(j["totals"]["gpu_hours_busy"].is_null()) << "busy time not measured";
  EXPECT_FALSE(j["totals"]["gpu_hours_allocated_idle"].is_null());
  for (const auto& w : j["warnings"]) EXPECT_EQ(w.get<std::string>().find("not measured"), std::string::npos) << w;

  // From the file, the report opens two readers: predictions are built while
  // the second one scans, and the work after the scan runs on two threads.
  // The same decisions, predictions and totals as from one reader.
  ReportQuery from_file = query;
  from_file.db_path = db;
  Result<RenderedReport> two_readers = RenderReport(from_file);
  ASSERT_TRUE(two_readers.ok()) << two_readers.error().ToString();
  const nlohmann::json j2 = nlohmann::json::parse(two_readers->body);
  EXPECT_FALSE(j["predictions"].empty());
  EXPECT_EQ(j2["predictions"], j["predictions"]);
  EXPECT_EQ(j2["prediction_summary"], j["prediction_summary"]);
  ASSERT_EQ(j2["top_decisions"].size(), j["top_decisions"].size());
  for (size_t k = 0; k < j["top_decisions"].size(); ++k) {
    EXPECT_EQ(j2["top_decisions"][k]["decision_id"], j["top_decisions"][k]["decision_id"]) << k;
    EXPECT_EQ(j2["top_decisions"][k]["cost_usd"], j["top_decisions"][k]["cost_usd"]) << k;
  }
  EXPECT_EQ(cents(j2["totals"]["cost_usd"]), total);
  EXPECT_EQ(cents(j2["totals"]["idle_usd"]), cents(j["totals"]["idle_usd"]));

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("cost truth: %d days, seed %llu, %zu nodes, bills $%.6f, report $%.6f, deviation %.3g %%, %.1f s\n", kDays,
              static_cast<unsigned long long>(kSeed), facts->nodes.size(), bills, facts->total.cost_usd,
              100 * deviation, seconds);
}

}  // namespace
}  // namespace gpuscaler::report
