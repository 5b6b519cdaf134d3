// Reports: query validation, the golden scenario in every format, the
// numbers behind it worked out by hand, and the attribution identity.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

using testing::GoldenParams;
using testing::kGoldenTotalUsd;
using testing::ParseCsv;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteGoldenScenario;

Result<RenderedReport> Render(const std::string& db, std::map<std::string, std::string> params) {
  Result<ReportQuery> q = ParseReportQuery(params);
  if (!q) return q.error();
  q->db_path = db;
  return RenderReport(*q);
}

TEST(ReportQuery, ParsesEveryParameter) {
  Result<ReportQuery> q = ParseReportQuery({{"from", "2026-11-01"},
                                            {"to", "2026-12-01T00:00:00Z"},
                                            {"group_by", "team, capacity_type"},
                                            {"period", "week"},
                                            {"format", "focus"},
                                            {"view", "nodes"},
                                            {"team_map", "a=x,b=y"},
                                            {"budget_monthly_usd", "1500.5"},
                                            {"as_of", "2026-11-20"},
                                            {"min_billed_seconds", "0"},
                                            {"loss_window_seconds", "1800"},
                                            {"top", "5"},
                                            {"billing_account_id", "123456789012"}});
  ASSERT_TRUE(q.ok()) << q.error().ToString();
  EXPECT_EQ(q->group_by, (std::vector<Dimension>{Dimension::kTeam, Dimension::kCapacityType}));
  EXPECT_EQ(q->period, Period::kWeek);
  EXPECT_EQ(q->format, Format::kFocus);
  EXPECT_EQ(q->view, View::kNodes);
  EXPECT_EQ(q->team_map.at("b"), "y");
  EXPECT_EQ(*q->budget_monthly_usd, 1500.5);
  EXPECT_EQ(q->min_billed, Seconds(0));
  EXPECT_EQ(q->loss_window, Seconds(1800));
  EXPECT_EQ(q->top, 5);
  EXPECT_EQ(q->billing_account_id, "123456789012");
  EXPECT_TRUE(q->db_path.empty());
}

TEST(ReportQuery, RejectsBadInputWithAClearMessage) {
  struct Case {
    std::string name;
    std::map<std::string, std::string> params;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"unknown column", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"group_by", "team,colour"}}, "unknown column 'colour'"},
      {"inverted range", {{"from", "2026-12-01"}, {"to", "2026-11-01"}}, "inverted"},
      {"empty range", {{"from", "2026-12-01"}, {"to", "2026-12-01"}}, "inverted"},
      {"run and all runs", {{"run", "gpuscaler"}, {"all_runs", "true"}}, "exclude each other"},
      {"all runs", {{"all_runs", "yes"}}, "all_runs"},
      {"empty run", {{"run", ""}}, "run"},
      {"bad date", {{"from", "2026-13-01"}, {"to", "2026-12-01"}}, "not a date"},
      {"unknown parameter", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"db", "/etc/passwd"}}, "unknown parameter 'db'"},
      {"unknown format", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"format", "xlsx"}}, "format"},
      {"twice", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"group_by", "team,team"}}, "twice"},
      {"team map", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"team_map", "a"}}, "class=team"},
      {"budget", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"budget_monthly_usd", "-1"}}, "non-negative"},
      {"top", {{"from", "2026-11-01"}, {"to", "2026-12-01"}, {"top", "0"}}, "top"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<ReportQuery> q = ParseReportQuery(c.params);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_NE(q.error().message().find(c.want), std::string::npos) << q.error().message();
  }
}

TEST(ReportQuery, MissingDatabaseIsNotFound) {
  TempDir dir;
  Result<RenderedReport> r = Render(dir.File("absent.db"), GoldenParams("csv"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kNotFound);
}

TEST(CentsPreservingTotal, RoundedPartsAddUpToTheRoundedTotal) {
  const std::vector<double> parts = {0.333333, 0.333333, 0.333334, 10.005, 2.675, 0.0049};
  const std::vector<int64_t> cents = CentsPreservingTotal(parts);
  int64_t sum = 0;
  for (int64_t c : cents) sum += c;
  double total = 0;
  for (double p : parts) total += p;
  EXPECT_EQ(sum, std::llround(total * 100));
  for (size_t i = 0; i < parts.size(); ++i) EXPECT_LE(std::fabs(cents[i] - parts[i] * 100), 1.0);
}

TEST(Periods, WeeksStartOnMondayAndMonthsOnTheFirst) {
  EXPECT_EQ(FormatRfc3339(PeriodStart(testing::T("2026-11-04T12:00:00Z"), Period::kWeek)), "2026-11-02T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(PeriodStart(testing::T("2026-11-02T00:00:00Z"), Period::kWeek)), "2026-11-02T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(NextPeriodStart(testing::T("2026-12-31T23:59:59Z"), Period::kMonth)), "2027-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(PeriodStart(testing::T("2026-02-28T10:00:00Z"), Period::kDay)), "2026-02-28T00:00:00Z");
}

class GoldenScenario : public ::testing::Test {
 protected:
  void SetUp() override { WriteGoldenScenario(db_ = dir_.File("golden.db")); }
  TempDir dir_;
  std::string db_;
};

TEST_F(GoldenScenario, BillsEachNodePiecewiseWithTheMinimumAndSplitsItExactly) {
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db_);
  ASSERT_TRUE(reader.ok());
  Result<ReportQuery> q = ParseReportQuery(GoldenParams("json"));
  ASSERT_TRUE(q.ok());
  Result<CostFacts> facts = BuildCostFacts(**reader, *q);
  ASSERT_TRUE(facts.ok()) << facts.error().ToString();
  EXPECT_EQ(FormatRfc3339(facts->as_of), "2026-11-03T12:00:00Z");
  EXPECT_NEAR(facts->total.cost_usd, kGoldenTotalUsd, 1e-9);
  std::map<std::string, const NodeFact*> nodes;
  for (const NodeFact& n : facts->nodes) nodes[n.instance_id] = &n;
  EXPECT_NEAR(nodes["i-b"]->m.cost_usd, 26.0, 1e-9);  // 8 h at $2, then 4 h at $2.50
  EXPECT_NEAR(nodes["i-c"]->m.cost_usd, 0.4 / 60, 1e-12);
  EXPECT_EQ(nodes["i-c"]->billed_seconds, 60);
  EXPECT_NEAR(nodes["i-c"]->m.idle_usd, 0.4 / 60, 1e-12);
  EXPECT_NEAR(nodes["i-d"]->m.cost_usd, 36 * 1.212, 1e-9);
  // B's training: 3 of 4 GPUs -> 3/4 of its bill, the rest idle; the last
  // 15 minutes (at $2.50) were lost: 3 GPUs x 0.25 h, $2.50 x 0.25 h x 3/4.
  EXPECT_NEAR(nodes["i-b"]->m.idle_usd, 26.0 / 4, 1e-9);
  EXPECT_NEAR(nodes["i-b"]->m.gpu_seconds_lost, 3 * 900, 1e-6);
  EXPECT_NEAR(nodes["i-b"]->m.lost_usd, 2.5 * 0.25 * 0.75, 1e-9);
  // On-demand equivalent of B: 12 h x $5.672.
  EXPECT_NEAR(nodes["i-b"]->m.on_demand_usd, 12 * 5.672, 1e-9);

  double attributed = 0, idle = 0;
  for (const CostLine& line : facts->lines) (line.allocation < 0 ? idle : attributed) += line.m.cost_usd;
  EXPECT_NEAR(attributed + idle, facts->total.cost_usd, 1e-9);
  // A: inference 2 of 4 GPUs for 12 h, training 4 of 4 for 18 h.
  EXPECT_NEAR(nodes["i-a"]->m.idle_usd, 12 * 5.672 / 2, 1e-9);
}

TEST_F(GoldenScenario, JsonTotalsAddUpToTheCent) {
  Result<RenderedReport> r = Render(db_, GoldenParams("json"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->content_type, "application/json");
  const nlohmann::json j = nlohmann::json::parse(r->body);
  const auto cents = [](const nlohmann::json& v) { return std::llround(v.get<double>() * 100); };
  EXPECT_EQ(cents(j["totals"]["cost_usd"]), std::llround(kGoldenTotalUsd * 100));
  EXPECT_EQ(cents(j["totals"]["attributed_usd"]) + cents(j["totals"]["idle_usd"]), cents(j["totals"]["cost_usd"]));
  int64_t allocation = 0, costs = 0, idle_rows = 0;
  for (const auto& row : j["allocation"]) {
    allocation += cents(row["cost_usd"]);
    if (row["class"] == "__idle__") idle_rows += cents(row["cost_usd"]);
  }
  for (const auto& row : j["costs"]) costs += cents(row["cost_usd"]);
  EXPECT_EQ(allocation, cents(j["totals"]["cost_usd"]));
  EXPECT_EQ(costs, cents(j["totals"]["cost_usd"]));
  EXPECT_EQ(idle_rows, cents(j["totals"]["idle_usd"]));
  // Teams: the usage's own, the map's, and nothing unallocated here.
  std::set<std::string> teams;
  for (const auto& row : j["allocation"]) teams.insert(row["team"].get<std::string>());
  EXPECT_EQ(teams, (std::set<std::string>{"search", "research", "__idle__"}));
  // Top decision: the one that launched A (the dearest node).
  EXPECT_EQ(j["top_decisions"][0]["decision_id"], 1);
  EXPECT_EQ(j["top_nodes"][0]["instance_id"], "i-a");
  EXPECT_EQ(j["budget"].size(), 2u);  // 11-02 and 11-03
}

// Every format of the golden scenario against tests/report/golden/.
// GPUSCALER_UPDATE_GOLDEN=1 rewrites the files instead.
TEST_F(GoldenScenario, EveryFormatMatchesItsGoldenFile) {
  struct Case {
    std::string file;
    std::map<std::string, std::string> params;
  };
  std::vector<Case> cases = {
      {"costs.csv", GoldenParams("csv")},
      {"report.json", GoldenParams("json")},
      {"focus.csv", GoldenParams("focus")},
      {"report.html", GoldenParams("html")},
  };
  for (const char* view : {"allocation", "savings", "budget", "decisions", "nodes", "predictions", "prediction_summary"}) {
    auto params = GoldenParams("csv");
    params["view"] = view;
    cases.push_back({std::string(view) + ".csv", params});
  }
  auto weekly = GoldenParams("csv");
  weekly["period"] = "week";
  weekly["group_by"] = "pool,zone,instance_type,class";
  cases.push_back({"costs_weekly_by_pool.csv", weekly});
  const std::string dir = std::string(GPUSCALER_SOURCE_DIR) + "/tests/report/golden/";
  const char* update = std::getenv("GPUSCALER_UPDATE_GOLDEN");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Result<RenderedReport> r = Render(db_, c.params);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    if (update != nullptr && std::string(update) == "1") {
      std::ofstream(dir + c.file, std::ios::binary) << r->body;
      continue;
    }
    const std::string want = ReadFile(dir + c.file);
    ASSERT_FALSE(want.empty()) << "missing golden file " << dir + c.file << " (GPUSCALER_UPDATE_GOLDEN=1 writes it)";
    EXPECT_EQ(r->body, want) << "differs from " << dir + c.file << " (GPUSCALER_UPDATE_GOLDEN=1 rewrites it)";
  }
}

TEST_F(GoldenScenario, CsvIsRfc4180) {
  Result<RenderedReport> r = Render(db_, [] {
    auto p = GoldenParams("csv");
    p["view"] = "nodes";
    return p;
  }());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->content_type, "text/csv; charset=utf-8");
  ASSERT_GE(r->body.size(), 2u);
  EXPECT_EQ(r->body.substr(r->body.size() - 2), "\r\n");
  const auto rows = ParseCsv(r->body);
  ASSERT_EQ(rows.size(), 5u);  // header + 4 nodes
  for (const auto& row : rows) EXPECT_EQ(row.size(), rows[0].size());
  // A reason with a comma and quotes survives the round trip.
  bool found = false;
  for (const auto& row : rows) {
    if (row[0] == "i-b") found = row.back() == "training backlog: cheapest expected cost, spot \"allowed\", 4 GPUs";
  }
  EXPECT_TRUE(found);
}

TEST_F(GoldenScenario, ARangeWithoutDataRendersEveryFormatWithZeroTotals) {
  for (const char* format : {"csv", "json", "focus", "html"}) {
    SCOPED_TRACE(format);
    auto p = GoldenParams(format);
    p["from"] = "2027-01-01";
    p["to"] = "2027-01-08";
    Result<RenderedReport> r = Render(db_, p);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_FALSE(r->body.empty());
    ASSERT_EQ(r->notices.size(), 1u);
    EXPECT_NE(r->notices[0].find("no nodes or usage recorded"), std::string::npos) << r->notices[0];
    if (std::string(format) == "json") {
      const nlohmann::json j = nlohmann::json::parse(r->body);
      EXPECT_EQ(j["totals"]["cost_usd"], 0.0);
      EXPECT_TRUE(j["costs"].empty());
    }
    if (std::string(format) == "focus") {
      EXPECT_EQ(ParseCsv(r->body).size(), 1u);  // the header
    }
  }
}

TEST_F(GoldenScenario, AsOfCutsRunningNodesAndMinimumCanBeTurnedOff) {
  auto p = GoldenParams("json");
  p["as_of"] = "2026-11-03T00:00:00Z";
  p["min_billed_seconds"] = "0";
  Result<RenderedReport> r = Render(db_, p);
  ASSERT_TRUE(r.ok());
  const nlohmann::json j = nlohmann::json::parse(r->body);
  // A to 11-03 00:00 (23 h), B 26, C 30 s, D 24 h.
  const double want = 23 * 5.672 + 26 + 0.4 / 120 + 24 * 1.212;
  EXPECT_EQ(std::llround(j["totals"]["cost_usd"].get<double>() * 100), std::llround(want * 100));
}

// B was interrupted at 14:00 holding 3 GPUs of training: the loss window
// decides how much of that counts as lost.
TEST_F(GoldenScenario, LossWindowSetsTheWorkCountedAsLost) {
  struct Case {
    const char* seconds;
    double lost_gpu_hours;
  };
  for (const Case& c : {Case{"0", 0.0}, Case{"900", 0.75}, Case{"3600", 3.0}}) {
    SCOPED_TRACE(c.seconds);
    auto p = GoldenParams("json");
    p["loss_window_seconds"] = c.seconds;
    Result<RenderedReport> r = Render(db_, p);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    const nlohmann::json j = nlohmann::json::parse(r->body);
    EXPECT_NEAR(j["totals"]["gpu_hours_lost"].get<double>(), c.lost_gpu_hours, 1e-9);
    EXPECT_NEAR(j["totals"]["lost_usd"].get<double>(), c.lost_gpu_hours * 2.5 / 4, 0.0051) << "at B's $2.50/h for 4 GPUs";
  }
}

TEST_F(GoldenScenario, TopCutsTheTopTablesAndTheWorstPredictions) {
  auto p = GoldenParams("json");
  Result<RenderedReport> all = Render(db_, p);
  p["top"] = "1";
  Result<RenderedReport> one = Render(db_, p);
  ASSERT_TRUE(all.ok() && one.ok());
  const nlohmann::json a = nlohmann::json::parse(all->body), o = nlohmann::json::parse(one->body);
  EXPECT_EQ(a["top_decisions"].size(), 3u);
  EXPECT_EQ(a["top_nodes"].size(), 4u);
  EXPECT_EQ(o["top_decisions"].size(), 1u);
  EXPECT_EQ(o["top_nodes"].size(), 1u);
  EXPECT_EQ(o["top_nodes"][0]["instance_id"], "i-a") << "the dearest";
  EXPECT_EQ(o["prediction_summary"]["worst_decision_ids"], nlohmann::json::array({2}));
  EXPECT_EQ(o["predictions"].size(), a["predictions"].size()) << "the per-decision list is not cut";
  // The CSV nodes view lists every node whatever --top says.
  auto csv = GoldenParams("csv");
  csv["view"] = "nodes";
  csv["top"] = "1";
  Result<RenderedReport> nodes = Render(db_, csv);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(ParseCsv(nodes->body).size(), 5u);
}

TEST_F(GoldenScenario, MonthPeriodBucketsTheRangeIntoItsMonth) {
  auto p = GoldenParams("csv");
  p["period"] = "month";
  p["group_by"] = "";
  Result<RenderedReport> r = Render(db_, p);
  ASSERT_TRUE(r.ok());
  const std::vector<std::vector<std::string>> rows = ParseCsv(r->body);
  ASSERT_EQ(rows.size(), 2u);  // one bucket, clipped to the range
  EXPECT_EQ(rows[1][0], "2026-11-02T00:00:00Z");
  EXPECT_EQ(rows[1][1], "2026-11-04T00:00:00Z");
  EXPECT_EQ(rows[1][2], "239.80");
}

TEST_F(GoldenScenario, FocusIdentityColumnsComeFromTheirFlags) {
  auto p = GoldenParams("focus");
  p["billing_account_id"] = "123456789012";
  p["provider_name"] = "Example Cloud";
  p["service_name"] = "Example Compute";
  Result<RenderedReport> r = Render(db_, p);
  ASSERT_TRUE(r.ok());
  const std::vector<std::vector<std::string>> rows = ParseCsv(r->body);
  ASSERT_GT(rows.size(), 1u);
  auto column = [&](const std::string& name) {
    const auto it = std::find(rows[0].begin(), rows[0].end(), name);
    EXPECT_NE(it, rows[0].end()) << name;
    return static_cast<size_t>(it - rows[0].begin());
  };
  for (size_t i = 1; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i][column("BillingAccountId")], "123456789012");
    for (const char* who : {"ProviderName", "PublisherName", "InvoiceIssuerName"}) {
      EXPECT_EQ(rows[i][column(who)], "Example Cloud") << who;
    }
    EXPECT_EQ(rows[i][column("ServiceName")], "Example Compute");
  }
}

}  // namespace
}  // namespace gpuscaler::report
