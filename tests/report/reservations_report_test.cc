// Reserved capacity in the reports: a simulated run with a reservation,
// written to an audit database through the production controller; the
// report, reading only that database, splits each reservation's cost into
// used and unused exactly as the simulated cloud billed it (to the cent),
// fills FOCUS's commitment and capacity reservation columns, and answers
// "should we buy a block?" on a simulated month.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "gpuscaler/model/builtin_catalog.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report/focus_conformance.h"
#include "report_test_util.h"
#include "sim/reservations_file.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/trace_readers.h"

namespace gpuscaler::report {
namespace {

int64_t Cents(double usd) { return std::llround(usd * 100.0); }
int64_t Cents(const nlohmann::json& v) { return std::llround(v.get<double>() * 100.0); }
std::string Dollars(int64_t cents) {
  return std::to_string(cents / 100) + "." + (cents % 100 < 10 ? "0" : "") + std::to_string(cents % 100);
}

// One replay of `jobs` (gpuscaler-jobs CSV) for `days` with `reservations`
// (a simulator reservations file; empty: none), its pool "h100" of
// p5.48xlarge in us-east-1a selecting cr-test and cb-test; the audit
// database at `db`.
sim::RunResult Replay(const std::string& db, const std::string& jobs, const std::string& reservations,
                      int days, const testing::TempDir& dir) {
  std::string catalog_source;
  const Catalog catalog = DefaultCatalog(GPUSCALER_SOURCE_DIR, &catalog_source);
  PolicyLoadResult policy = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\n"
      "pools:\n  - name: h100\n    instance_types: [p5.48xlarge]\n    zones: [us-east-1a]\n"
      "    reservations: [cr-test, cb-test]\n"
      "classes:\n  - name: training\n    interruptible: false\n",
      "policy.yaml");
  EXPECT_TRUE(policy.problems.empty());
  Result<sim::Trace> trace = sim::ParseTrace(jobs, "jobs.csv", sim::TraceFormat::kGpuscalerJobs);
  EXPECT_TRUE(trace.ok()) << trace.error().ToString();
  sim::Scenario scenario = sim::MakeTraceScenario(std::move(*trace), {}, catalog, policy.policy, 1, days);
  if (!reservations.empty()) {
    const std::string file = dir.File("reservations.yaml");
    std::ofstream(file) << reservations;
    Result<std::vector<Reservation>> r = sim::ReadReservationsFile(file, scenario.start, scenario.catalog);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    scenario.cloud.reservations = std::move(*r);
  }
  Result<sim::RunSpec> spec = sim::MakeRunSpec("gpuscaler", scenario, nullptr);
  EXPECT_TRUE(spec.ok());
  SqliteAuditStoreOptions so;
  so.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick;
  so.group_commit_ticks = 64;
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(db, so);
  EXPECT_TRUE(store.ok());
  sim::RunOptions options;
  options.store = store->get();
  sim::RunResult run = sim::RunScenario(scenario, *spec, options);
  EXPECT_TRUE((*store)->Flush().ok());
  EXPECT_EQ(run.controller_errors, 0);
  return run;
}

// Four 8-GPU jobs that may not run on spot, 4 hours each, from the start.
constexpr const char* kFourJobs =
    "id,submit_s,duration_s,gpus,cpu_milli,memory_mib,class,interruptible\n"
    "a,0,14400,8,8000,65536,training,false\n"
    "b,0,14400,8,8000,65536,training,false\n"
    "c,0,14400,8,8000,65536,training,false\n"
    "d,0,14400,8,8000,65536,training,false\n";

Result<RenderedReport> Render(const std::string& db, Format format, View view = View::kCosts,
                              std::vector<Dimension> group_by = {}) {
  ReportQuery query;
  query.db_path = db;
  query.from_given = query.to_given = false;
  query.format = format;
  query.view = view;
  query.group_by = std::move(group_by);
  return RenderReport(query);
}

TEST(ReservationReport, UsedPlusUnusedIsTheReservationsCostAndMatchesTheSimulatedCloudToTheCent) {
  testing::TempDir dir;
  const std::string db = dir.File("odcr.db");
  const sim::RunResult run = Replay(
      db, kFourJobs,
      "reservations:\n  - {id: cr-test, instance_type: p5.48xlarge, zone: us-east-1a, count: 6}\n", 1, dir);
  ASSERT_EQ(run.reservations.size(), 1u);
  const sim::ReservationUse& truth = run.reservations[0];
  ASSERT_GT(truth.used_usd, 0);
  ASSERT_GT(truth.unused_usd, 0) << "two of the six slots are never needed";

  Result<RenderedReport> json = Render(db, Format::kJson, View::kCosts, {Dimension::kCapacityType});
  ASSERT_TRUE(json.ok()) << json.error().ToString();
  const nlohmann::json j = nlohmann::json::parse(json->body);
  ASSERT_TRUE(j.contains("reservations")) << json->body.substr(0, 2000);
  const nlohmann::json& res = j["reservations"]["by_reservation"].at(0);
  EXPECT_EQ(res["id"], "cr-test");
  EXPECT_EQ(res["kind"], "default");
  EXPECT_EQ(res["pools"], nlohmann::json::array({"h100"}));
  EXPECT_EQ(Cents(res["cost_usd"]), Cents(truth.cost_usd));
  EXPECT_EQ(Cents(res["used_usd"]), Cents(truth.used_usd));
  EXPECT_EQ(Cents(res["unused_usd"]), Cents(truth.cost_usd) - Cents(truth.used_usd));
  EXPECT_EQ(Cents(res["used_usd"]) + Cents(res["unused_usd"]), Cents(res["cost_usd"]));
  EXPECT_NEAR(res["slot_hours"].get<double>(), truth.slot_hours, 1e-3);
  EXPECT_NEAR(res["used_hours"].get<double>(), truth.used_hours, 1e-3);
  EXPECT_EQ(Cents(j["reservations"]["unused_usd"]), Cents(res["unused_usd"]));

  // Grouped by capacity type, the reserved instances show as "reserved",
  // costing the used part; the bought ones as on-demand.
  std::map<std::string, int64_t> by_type;
  for (const nlohmann::json& row : j["costs"]) by_type[row["capacity_type"]] += Cents(row["cost_usd"]);
  EXPECT_EQ(by_type["reserved"], Cents(truth.used_usd));
  EXPECT_EQ(by_type["on-demand"], Cents(run.cost_by_capacity_type.at("on-demand")));

  // The CSV view: a row per reservation and pool, adding up to the same.
  Result<RenderedReport> csv = Render(db, Format::kCsv, View::kReservations);
  ASSERT_TRUE(csv.ok()) << csv.error().ToString();
  const std::vector<std::vector<std::string>> rows = testing::ParseCsv(csv->body);
  ASSERT_EQ(rows.size(), 2u) << csv->body;
  EXPECT_EQ(rows[0], (std::vector<std::string>{"reservation_id", "kind", "instance_type", "region", "zone",
                                               "pool", "slots", "used_hours", "unused_hours", "used_usd",
                                               "unused_usd", "cost_usd"}));
  EXPECT_EQ(rows[1][0], "cr-test");
  EXPECT_EQ(rows[1][5], "h100");
  EXPECT_EQ(Cents(std::stod(rows[1][9])), Cents(truth.used_usd));
  EXPECT_EQ(Cents(std::stod(rows[1][11])), Cents(truth.cost_usd));

  // The HTML page has the table too.
  Result<RenderedReport> html = Render(db, Format::kHtml);
  ASSERT_TRUE(html.ok()) << html.error().ToString();
  EXPECT_NE(html->body.find("Reserved capacity: used and unused"), std::string::npos);
  EXPECT_NE(html->body.find(Dollars(Cents(truth.cost_usd) - Cents(truth.used_usd))), std::string::npos)
      << "the unused cost is on the page";
}

// A 2-slot Capacity Block from hour 2 to hour 10 for 1,600 USD; two jobs
// run on it for 4 hours.
constexpr const char* kBlock =
    "reservations:\n"
    "  - {id: cb-test, instance_type: p5.48xlarge, zone: us-east-1a, count: 2, kind: capacity-block,\n"
    "     start: 2h, end: 10h, upfront_usd: 1600}\n";
constexpr const char* kTwoJobsOnTheBlock =
    "id,submit_s,duration_s,gpus,cpu_milli,memory_mib,class,interruptible\n"
    "a,7200,14400,8,8000,65536,training,false\n"
    "b,7200,14400,8,8000,65536,training,false\n";

TEST(ReservationReport, FocusFillsTheCommitmentColumnsAndShowsTheBlocksFeeAsAPurchase) {
  std::optional<testing::FocusSpec> spec = testing::LoadFocusSpec();
  if (!spec) GTEST_SKIP() << "no FOCUS column table at " << testing::FocusSpecPath();
  testing::TempDir dir;
  const std::string db = dir.File("block.db");
  const sim::RunResult run = Replay(db, kTwoJobsOnTheBlock, kBlock, 1, dir);
  ASSERT_EQ(run.reservations.size(), 1u);
  const sim::ReservationUse& truth = run.reservations[0];
  ASSERT_NEAR(truth.cost_usd, 1600, 0.005) << "the block's 16 slot-hours carry its fee";
  ASSERT_GT(truth.used_usd, 0);

  Result<RenderedReport> focus = Render(db, Format::kFocus);
  ASSERT_TRUE(focus.ok()) << focus.error().ToString();
  const std::vector<std::map<std::string, std::string>> rows =
      testing::ExpectFocusConforms(*spec, focus->body);
  double purchase = 0, effective = 0, used = 0, unused = 0, billed_usage = 0;
  int purchases = 0;
  for (const auto& row : rows) {
    if (row.at("CommitmentDiscountId") != "cb-test") {
      EXPECT_TRUE(row.at("CapacityReservationId").empty());
      continue;
    }
    EXPECT_EQ(row.at("CommitmentDiscountType"), "Capacity Block");
    EXPECT_EQ(row.at("CommitmentDiscountCategory"), "Usage");
    EXPECT_EQ(row.at("CapacityReservationId"), "cb-test");
    const double effective_cost = std::stod(row.at("EffectiveCost"));
    if (row.at("ChargeCategory") == "Purchase") {
      ++purchases;
      purchase += std::stod(row.at("BilledCost"));
      EXPECT_EQ(row.at("ChargeFrequency"), "One-Time");
      EXPECT_EQ(effective_cost, 0);
      continue;
    }
    effective += effective_cost;
    billed_usage += std::stod(row.at("BilledCost"));
    EXPECT_EQ(row.at("CapacityReservationStatus"), row.at("CommitmentDiscountStatus"));
    if (row.at("CommitmentDiscountStatus") == "Used") {
      used += effective_cost;
      EXPECT_EQ(row.at("x_CapacityType"), "reserved");
      EXPECT_EQ(row.at("PricingCategory"), "Committed");
    } else {
      EXPECT_EQ(row.at("CommitmentDiscountStatus"), "Unused");
      unused += effective_cost;
      EXPECT_TRUE(row.at("ConsumedQuantity").empty());
    }
  }
  EXPECT_EQ(purchases, 1);
  EXPECT_EQ(Cents(purchase), 160000);
  // FOCUS: the usage's EffectiveCost is the purchase's BilledCost, the used
  // and unused parts as the simulated cloud split them; the block's hours
  // were billed with its purchase.
  EXPECT_EQ(Cents(effective), Cents(purchase));
  EXPECT_EQ(Cents(used), Cents(truth.used_usd));
  EXPECT_EQ(Cents(unused), Cents(truth.unused_usd));
  EXPECT_EQ(billed_usage, 0);

  Result<RenderedReport> json = Render(db, Format::kJson);
  ASSERT_TRUE(json.ok());
  const nlohmann::json j = nlohmann::json::parse(json->body);
  const nlohmann::json& res = j["reservations"]["by_reservation"].at(0);
  EXPECT_EQ(res["kind"], "capacity-block");
  EXPECT_EQ(Cents(res["purchase_in_range_usd"]), 160000);
  EXPECT_NEAR(res["usd_per_slot_hour"].get<double>(), 100.0, 1e-9) << "1600 USD over 2 slots x 8 hours";
  EXPECT_EQ(Cents(res["used_usd"]) + Cents(res["unused_usd"]), 160000);
}

// Jobs over a month on p5.48xlarge, no reservation: one 8-GPU job of 12
// hours every day, and on the 10th a second one beside it.
std::string AMonthOfJobs() {
  std::string csv = "id,submit_s,duration_s,gpus,cpu_milli,memory_mib,class,interruptible\n";
  for (int day = 0; day < 30; ++day) {
    csv += "d" + std::to_string(day) + "," + std::to_string(day * 86400) +
           ",43200,8,8000,65536,training,false\n";
  }
  csv += "extra,778000,43200,8,8000,65536,training,false\n";
  return csv;
}

TEST(ReservationReport, BuyABlockWeighsTheFeeAgainstWhatTheRecordedMonthPaid) {
  testing::TempDir dir;
  const std::string db = dir.File("month.db");
  const sim::RunResult run = Replay(db, AMonthOfJobs(), "", 30, dir);
  ASSERT_GT(run.cost_by_capacity_type.at("on-demand"), 0);

  ReportQuery query;
  query.db_path = db;
  query.from_given = query.to_given = false;
  query.format = Format::kJson;
  query.block_type = "p5.48xlarge";
  query.block_count = 1;
  query.block_upfront_usd = 20000;
  Result<RenderedReport> one = RenderReport(query);
  ASSERT_TRUE(one.ok()) << one.error().ToString();
  const nlohmann::json b = nlohmann::json::parse(one->body).at("buy_block");
  EXPECT_EQ(b["instance_type"], "p5.48xlarge");
  EXPECT_EQ(Cents(b["recorded_usd"]), Cents(run.cost_by_capacity_type.at("on-demand")));
  EXPECT_EQ(b["peak_nodes"], 2);
  // One slot holds one node at a time: about 12 hours a day of the 30.
  EXPECT_GT(b["covered_node_hours"].get<double>(), 30 * 11.5);
  EXPECT_LT(b["covered_node_hours"].get<double>(), b["recorded_node_hours"].get<double>());
  EXPECT_NEAR(b["block_idle_slot_hours"].get<double>(),
              b["block_slot_hours"].get<double>() - b["covered_node_hours"].get<double>(), 1e-3);
  EXPECT_EQ(Cents(b["with_block_usd"]), 2000000 + Cents(b["still_bought_usd"]));
  EXPECT_EQ(Cents(b["net_savings_usd"]), Cents(b["recorded_usd"]) - Cents(b["with_block_usd"]));
  EXPECT_NE(b["note"].get<std::string>().find("what-if on recorded usage"), std::string::npos);

  // Two slots hold every node: nothing is left to buy.
  query.block_count = 2;
  query.format = Format::kCsv;
  query.view = View::kBuyBlock;
  Result<RenderedReport> two = RenderReport(query);
  ASSERT_TRUE(two.ok()) << two.error().ToString();
  const std::vector<std::vector<std::string>> rows = testing::ParseCsv(two->body);
  ASSERT_EQ(rows.size(), 2u) << two->body;
  std::map<std::string, std::string> row;
  for (size_t i = 0; i < rows[0].size(); ++i) row[rows[0][i]] = rows[1][i];
  EXPECT_EQ(row["still_bought_usd"], "0.00");
  EXPECT_EQ(row["covered_usd"], row["recorded_usd"]);
  EXPECT_EQ(row["block_count"], "2");
}

TEST(ReservationReport, TheBlockHoldsTheDearestInstancesRunningAtEachMoment) {
  testing::TempDir dir;
  const std::string db = dir.File("hand.db");
  {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(db)).value();
    ASSERT_TRUE(store->BeginRun({"hand", "sim", "h", testing::T("2026-03-01T00:00:00Z")}).ok());
    // 0h-4h an on-demand node at 10/h; 1h-3h a spot one at 4/h; 2h-6h an
    // on-demand one at 10/h; another type all along.
    auto node = [&](const char* id, const char* type, CapacityType ct, double usd, const char* from,
                    const char* to) {
      NodeLaunchRecord n;
      n.instance_id = id;
      n.node_id = id;
      n.pool = "p";
      n.offering = testing::MakeOffering(type, "us-east-1a", ct, usd, 10);
      n.gpu_count = 8;
      n.launch_time = testing::T(from);
      ASSERT_TRUE(store->RecordNodeLaunch(n).ok());
      ASSERT_TRUE(store->RecordNodeEnd({id, testing::T(to), "terminated"}).ok());
    };
    node("i-a", "p5.48xlarge", CapacityType::kOnDemand, 10, "2026-03-01T00:00:00Z", "2026-03-01T04:00:00Z");
    node("i-b", "p5.48xlarge", CapacityType::kSpot, 4, "2026-03-01T01:00:00Z", "2026-03-01T03:00:00Z");
    node("i-c", "p5.48xlarge", CapacityType::kOnDemand, 10, "2026-03-01T02:00:00Z", "2026-03-01T06:00:00Z");
    node("i-x", "g5.xlarge", CapacityType::kOnDemand, 1, "2026-03-01T00:00:00Z", "2026-03-01T06:00:00Z");
    ASSERT_TRUE(store->EndRun(testing::T("2026-03-01T06:00:00Z")).ok());
  }
  ReportQuery query;
  query.db_path = db;
  query.from = testing::T("2026-03-01T00:00:00Z");
  query.to = testing::T("2026-03-01T06:00:00Z");
  query.format = Format::kJson;
  query.block_type = "p5.48xlarge";
  query.block_count = 1;
  query.block_upfront_usd = 50;
  Result<RenderedReport> r = RenderReport(query);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const nlohmann::json b = nlohmann::json::parse(r->body).at("buy_block");
  // Recorded: 40 + 8 + 40. One slot: 0-6h always a 10/h node (never the
  // spot one), 60 USD avoided; left: the spot node and the other 10/h
  // node's overlap 2h-4h.
  EXPECT_EQ(Cents(b["recorded_on_demand_usd"]), 8000);
  EXPECT_EQ(Cents(b["recorded_spot_usd"]), 800);
  EXPECT_NEAR(b["covered_node_hours"].get<double>(), 6, 1e-9);
  EXPECT_EQ(Cents(b["covered_usd"]), 6000);
  EXPECT_EQ(Cents(b["still_bought_usd"]), 2800);
  EXPECT_EQ(Cents(b["with_block_usd"]), 7800);
  EXPECT_EQ(Cents(b["net_savings_usd"]), 1000);
  EXPECT_EQ(b["peak_nodes"], 3);
  EXPECT_NEAR(b["block_idle_slot_hours"].get<double>(), 0, 1e-9);
}

TEST(ReservationReport, TheBlockFlagsGoTogetherAndTheViewNeedsThem) {
  Result<ReportQuery> alone = ParseReportQuery({{"view", "buy_block"}});
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message().find("block_type"), std::string::npos);
  Result<ReportQuery> part = ParseReportQuery({{"block_type", "p5.48xlarge"}, {"block_count", "2"}});
  ASSERT_FALSE(part.ok());
  EXPECT_NE(part.error().message().find("go together"), std::string::npos);
  Result<ReportQuery> all = ParseReportQuery({{"view", "buy_block"},
                                              {"block_type", "p5.48xlarge"},
                                              {"block_count", "2"},
                                              {"block_upfront_usd", "9.5"}});
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  EXPECT_EQ(all->block_type, "p5.48xlarge");
  EXPECT_EQ(all->block_count, 2);
  EXPECT_EQ(all->block_upfront_usd, 9.5);
  Result<ReportQuery> zero =
      ParseReportQuery({{"block_type", "p5.48xlarge"}, {"block_count", "0"}, {"block_upfront_usd", "1"}});
  EXPECT_FALSE(zero.ok());
}

}  // namespace
}  // namespace gpuscaler::report
