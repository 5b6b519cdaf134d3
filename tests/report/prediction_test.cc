// Predicted vs realized cost per decision (report/prediction.h): a known
// launch, a spot price change, an interruption, a capacity fallback and a
// node still running at the report's end.
#include "gpuscaler/report/prediction.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

constexpr int64_t kT0 = 1'780'000'000;
WallTime At(double hours) { return FromUnixSeconds(kT0 + static_cast<int64_t>(hours * 3600)); }

// As a report does: the cost facts of [from, to) up to as_of, then the
// predictions of their nodes.
Result<std::vector<DecisionPrediction>> PredictionsOf(AuditReader& reader, WallTime from, WallTime to,
                                                      WallTime as_of) {
  ReportQuery query;
  query.from = from;
  query.to = to;
  query.as_of = as_of;
  Result<CostFacts> facts = BuildCostFacts(reader, query);
  if (!facts) return facts.error();
  return BuildPredictions(reader, *facts);
}

Offering MakeOffering(const std::string& zone, CapacityType type, double usd) {
  Offering o;
  o.instance_type = "g5.xlarge";
  o.region = "us-east-1";
  o.zone = zone;
  o.capacity_type = type;
  o.usd_per_hour = usd;
  o.on_demand_usd_per_hour = 3.0;
  return o;
}

class Predictions : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::path(::testing::TempDir()) / ("predictions_" + std::to_string(::getpid()) + ".db"))
            .string();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
    auto store = std::move(SqliteAuditStore::Open(path_)).value();
    DecisionRecord d;
    d.time = At(0);
    // Two spot nodes at $1/h each.
    d.plan_json =
        R"({"launches":[{"pool":"gpu","offering":{"instance_type":"g5.xlarge","region":"us-east-1",)"
        R"("zone":"us-east-1a","capacity_type":"spot","usd_per_hour":1.0},"count":2,"usd_per_hour":2.0}]})";
    const int64_t id = store->RecordDecision(d).value();
    DecisionRecord idle;
    idle.time = At(0.5);
    ASSERT_TRUE(store->RecordDecision(idle).ok());

    auto launch = [&](const std::string& instance, const Offering& o, double at_hours, int64_t decision) {
      NodeLaunchRecord n;
      n.instance_id = instance;
      n.node_id = instance;
      n.pool = "gpu";
      n.offering = o;
      n.gpu_count = 1;
      n.launch_time = At(at_hours);
      n.decision_id = decision;
      ASSERT_TRUE(store->RecordNodeLaunch(n).ok());
    };
    const Offering spot = MakeOffering("us-east-1a", CapacityType::kSpot, 1.0);
    // Runs 3 h; its spot price doubles after the first hour: realized 1 + 2 × 2 = 5, predicted 3.
    launch("i-moved", spot, 0, id);
    ASSERT_TRUE(store->RecordNodePrice("i-moved", At(1), 2.0).ok());
    ASSERT_TRUE(store->RecordNodeEnd({"i-moved", At(3), "terminated"}).ok());
    // Interrupted after 30 minutes: realized and predicted 0.5.
    launch("i-reclaimed", spot, 0, id);
    ASSERT_TRUE(store->RecordNodeEnd({"i-reclaimed", At(0.5), "interrupted"}).ok());
    // A capacity fallback to on-demand at $3/h, running at the report's end
    // (4 h): realized 9, predicted at the pool's planned $1/h: 3.
    launch("i-fallback", MakeOffering("us-east-1b", CapacityType::kOnDemand, 3.0), 1, id);
    // Found running, not launched by a decision: not in the view.
    launch("i-found", spot, 0, 0);
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  std::string path_;
};

TEST_F(Predictions, ComparesThePlansPricesWithWhatItsNodesCostOverTheirLives) {
  auto reader = std::move(AuditReader::Open(path_)).value();
  Result<std::vector<DecisionPrediction>> got = PredictionsOf(*reader, At(-24), At(24), At(4));
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_EQ(got->size(), 1u);
  const DecisionPrediction& p = got->front();
  EXPECT_EQ(p.decision_id, 1);
  EXPECT_DOUBLE_EQ(p.predicted_usd_per_hour, 2.0);
  EXPECT_EQ(p.nodes_planned, 2);
  EXPECT_EQ(p.nodes_launched, 3);
  EXPECT_EQ(p.nodes_interrupted, 1);
  EXPECT_EQ(p.nodes_running, 1);
  EXPECT_NEAR(p.node_hours, 6.5, 1e-9);
  EXPECT_NEAR(p.predicted_usd, 6.5, 1e-9);
  EXPECT_NEAR(p.realized_usd, 14.5, 1e-9);
}

TEST_F(Predictions, AppearInTheJsonReport) {
  auto reader = std::move(AuditReader::Open(path_)).value();
  Result<ReportQuery> q = ParseReportQuery({{"from", FormatRfc3339(At(-24))},
                                            {"to", FormatRfc3339(At(24))},
                                            {"as_of", FormatRfc3339(At(4))},
                                            {"format", "json"}});
  ASSERT_TRUE(q.ok()) << q.error().message();
  Result<RenderedReport> r = RenderReport(*reader, *q);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const nlohmann::json j = nlohmann::json::parse(r->body);
  ASSERT_EQ(j.at("predictions").size(), 1u) << r->body;
  const nlohmann::json& row = j.at("predictions")[0];
  EXPECT_EQ(row.at("decision_id"), 1);
  EXPECT_DOUBLE_EQ(row.at("realized_usd").get<double>(), 14.5);
  EXPECT_DOUBLE_EQ(row.at("predicted_usd").get<double>(), 6.5);
  EXPECT_DOUBLE_EQ(row.at("realized_minus_predicted_usd").get<double>(), 8.0);
  const nlohmann::json& summary = j.at("prediction_summary");
  EXPECT_EQ(summary.at("decisions"), 1);
  EXPECT_DOUBLE_EQ(summary.at("predicted_usd").get<double>(), 6.5);
  EXPECT_DOUBLE_EQ(summary.at("realized_usd").get<double>(), 14.5);
  EXPECT_DOUBLE_EQ(summary.at("median_abs_error_pct").get<double>(), 123.08);
  EXPECT_EQ(summary.at("worst_decision_ids"), nlohmann::json::array({1}));
  // Written in parts (the predictions on other threads), the text is what
  // one dump of the whole document writes.
  EXPECT_EQ(nlohmann::ordered_json::parse(r->body).dump(2) + "\n", r->body);
}

TEST_F(Predictions, HaveTheirOwnCsvViewsPerDecisionAndInSummary) {
  auto reader = std::move(AuditReader::Open(path_)).value();
  auto render = [&](const char* view) {
    Result<ReportQuery> q = ParseReportQuery({{"from", FormatRfc3339(At(-24))},
                                              {"to", FormatRfc3339(At(24))},
                                              {"as_of", FormatRfc3339(At(4))},
                                              {"view", view}});
    EXPECT_TRUE(q.ok()) << q.error().message();
    Result<RenderedReport> r = RenderReport(*reader, *q);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return testing::ParseCsv(r->body);
  };
  const std::vector<std::vector<std::string>> rows = render("predictions");
  ASSERT_EQ(rows.size(), 2u);
  const std::vector<std::string> header = {"decision_id",
                                           "decided_at",
                                           "nodes_planned",
                                           "nodes_launched",
                                           "nodes_interrupted",
                                           "nodes_running",
                                           "node_hours",
                                           "predicted_usd_per_hour",
                                           "predicted_usd",
                                           "realized_usd",
                                           "realized_minus_predicted_usd",
                                           "error_pct"};
  EXPECT_EQ(rows[0], header);
  const std::vector<std::string> want = {
      "1", FormatRfc3339(At(0)), "2", "3", "1", "1", "6.5000", "2.0000", "6.50", "14.50", "8.00", "123.08"};
  EXPECT_EQ(rows[1], want);

  const std::vector<std::vector<std::string>> summary = render("prediction_summary");
  ASSERT_EQ(summary.size(), 2u);
  const std::vector<std::string> summary_header = {"decisions",
                                                   "decisions_compared",
                                                   "predicted_usd",
                                                   "realized_usd",
                                                   "realized_minus_predicted_usd",
                                                   "error_pct",
                                                   "median_abs_error_pct",
                                                   "p90_abs_error_pct",
                                                   "worst_decision_ids"};
  EXPECT_EQ(summary[0], summary_header);
  const std::vector<std::string> summary_want = {"1",      "1",      "6.50",   "14.50", "8.00",
                                                 "123.08", "123.08", "123.08", "1"};
  EXPECT_EQ(summary[1], summary_want);
}

// Totals, the median and p90 of |error| (interpolated between ranks), and
// the worst decisions by dollars; a decision with nothing predicted has no
// relative error but can still be among the worst.
TEST(PredictionSummary, TotalsMedianP90AndWorstDecisions) {
  auto decision = [](int64_t id, double predicted, double realized) {
    DecisionPrediction p;
    p.decision_id = id;
    p.predicted_usd = predicted;
    p.realized_usd = realized;
    return p;
  };
  // |errors| of the compared five: 10, 20, 0, 50, 0 %.
  const std::vector<DecisionPrediction> predictions = {decision(1, 10, 11), decision(2, 10, 8),
                                                       decision(3, 10, 10), decision(4, 10, 15),
                                                       decision(5, 10, 10), decision(6, 0, 3)};
  const PredictionSummary s = SummarizePredictions(predictions, 3);
  EXPECT_EQ(s.decisions, 6);
  EXPECT_EQ(s.decisions_compared, 5);
  EXPECT_DOUBLE_EQ(s.predicted_usd, 50);
  EXPECT_DOUBLE_EQ(s.realized_usd, 57);
  ASSERT_TRUE(s.median_abs_error_pct && s.p90_abs_error_pct);
  EXPECT_NEAR(*s.median_abs_error_pct, 10, 1e-9);
  EXPECT_NEAR(*s.p90_abs_error_pct, 20 + 0.6 * 30, 1e-9);  // rank 3.6 of 0, 0, 10, 20, 50
  EXPECT_EQ(s.worst, (std::vector<size_t>{3, 5, 1}));      // $5 (id 4), $3 (id 6), $2 (id 2)
  EXPECT_EQ(SummarizePredictions(predictions, 10).worst.size(), 4u)
      << "predictions that held are not 'worst'";

  const PredictionSummary none = SummarizePredictions({decision(7, 0, 0)}, 3);
  EXPECT_EQ(none.decisions_compared, 0);
  EXPECT_FALSE(none.median_abs_error_pct.has_value());
  EXPECT_TRUE(none.worst.empty());
  EXPECT_FALSE(RelativeErrorPct(decision(8, 0, 1)).has_value());
  EXPECT_NEAR(*RelativeErrorPct(decision(9, 4, 3)), -25, 1e-9);
}

TEST_F(Predictions, ABrokenPlanNamesItsDecision) {
  {
    auto store = std::move(SqliteAuditStore::Open(path_)).value();
    DecisionRecord d;
    d.time = At(2);
    d.plan_json = "not json";
    const int64_t id = store->RecordDecision(d).value();
    NodeLaunchRecord n;
    n.instance_id = "i-broken";
    n.pool = "gpu";
    n.offering = MakeOffering("us-east-1a", CapacityType::kSpot, 1.0);
    n.launch_time = At(2);
    n.decision_id = id;
    ASSERT_TRUE(store->RecordNodeLaunch(n).ok());
  }
  auto reader = std::move(AuditReader::Open(path_)).value();
  Result<std::vector<DecisionPrediction>> got = PredictionsOf(*reader, At(-24), At(24), At(4));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message().find("decision 3 plan_json"), std::string::npos) << got.error().message();
}

}  // namespace
}  // namespace gpuscaler::report
