#include <nlohmann/json.hpp>

#include "tables.h"

namespace gpuscaler::report::internal {
namespace {

nlohmann::ordered_json TableJson(const Table& t) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const std::vector<Cell>& r : t.rows) {
    nlohmann::ordered_json row;
    for (size_t c = 0; c < r.size(); ++c) {
      if (r[c].number) {
        row[t.columns[c]] = *r[c].number;
      } else if (r[c].text.empty()) {
        row[t.columns[c]] = nullptr;
      } else {
        row[t.columns[c]] = r[c].text;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

double Round(double v, double scale) { return std::round(v * scale) / scale; }

// Predicted vs realized cost per decision (report/prediction.h).
nlohmann::ordered_json PredictionsJson(const std::vector<DecisionPrediction>& predictions) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const DecisionPrediction& p : predictions) {
    rows.push_back({{"decision_id", p.decision_id},
                    {"time", FormatRfc3339(p.time)},
                    {"predicted_usd_per_hour", Round(p.predicted_usd_per_hour, 1e4)},
                    {"nodes_planned", p.nodes_planned},
                    {"nodes_launched", p.nodes_launched},
                    {"nodes_interrupted", p.nodes_interrupted},
                    {"nodes_running", p.nodes_running},
                    {"node_hours", Round(p.node_hours, 1e4)},
                    {"predicted_usd", Round(p.predicted_usd, 1e4)},
                    {"realized_usd", Round(p.realized_usd, 1e4)},
                    {"realized_minus_predicted_usd", Round(p.realized_usd - p.predicted_usd, 1e4)}});
  }
  return rows;
}

nlohmann::ordered_json TotalsJson(const Totals& t) {
  nlohmann::ordered_json tj;
  tj["cost_usd"] = static_cast<double>(t.cost_cents) / 100.0;
  tj["attributed_usd"] = static_cast<double>(t.attributed_cents) / 100.0;
  tj["idle_usd"] = static_cast<double>(t.idle_cents) / 100.0;
  tj["on_demand_equivalent_usd"] = static_cast<double>(t.on_demand_cents) / 100.0;
  tj["savings_usd"] = static_cast<double>(t.savings_cents) / 100.0;
  tj["savings_pct"] = Round(t.savings_pct, 100);
  tj["spot_savings_usd"] = static_cast<double>(t.spot_savings_cents) / 100.0;
  tj["gpu_hours_paid"] = Round(t.gpu_hours_paid, 1000);
  tj["gpu_hours_allocated"] = Round(t.gpu_hours_allocated, 1000);
  tj["gpu_hours_busy"] = t.gpu_hours_busy ? nlohmann::ordered_json(Round(*t.gpu_hours_busy, 1000)) : nullptr;
  tj["gpu_hours_allocated_idle"] =
      t.gpu_hours_allocated_idle ? nlohmann::ordered_json(Round(*t.gpu_hours_allocated_idle, 1000)) : nullptr;
  tj["gpu_hours_idle"] = Round(t.gpu_hours_paid - t.gpu_hours_allocated, 1000);
  tj["gpu_hours_lost"] = Round(t.gpu_hours_lost, 1000);
  tj["lost_usd"] = static_cast<double>(t.lost_cents) / 100.0;
  tj["nodes"] = t.nodes;
  tj["interrupted_nodes"] = t.interrupted_nodes;
  return tj;
}

// The query's parameters shared by single and fleet reports, after
// `scope`, `from`, `to` and `as_of`.
void QueryParameters(const ReportQuery& query, nlohmann::ordered_json* q) {
  (*q)["period"] = std::string(ToString(query.period));
  (*q)["group_by"] = nlohmann::ordered_json::array();
  for (Dimension d : query.group_by) (*q)["group_by"].push_back(std::string(ToString(d)));
  (*q)["team_map"] = nlohmann::ordered_json::object();
  for (const auto& [cls, team] : query.team_map) (*q)["team_map"][cls] = team;
  (*q)["budget_monthly_usd"] =
      query.budget_monthly_usd ? nlohmann::ordered_json(*query.budget_monthly_usd) : nullptr;
  (*q)["min_billed_seconds"] = query.min_billed.count();
  (*q)["loss_window_seconds"] = query.loss_window.count();
  (*q)["currency"] = "USD";
}

constexpr View kJsonTables[] = {View::kAllocation, View::kCosts,     View::kSavings,
                                View::kBudget,     View::kDecisions, View::kNodes};
std::string JsonTableName(View v) {
  return v == View::kDecisions ? "top_decisions" : v == View::kNodes ? "top_nodes" : std::string(ToString(v));
}

// The prediction summary view's row as an object, its worst decisions as ids.
nlohmann::ordered_json PredictionSummaryJson(const CostFacts& facts, const ReportViews& views,
                                             const ReportQuery& query) {
  nlohmann::ordered_json summary = TableJson(BuildTable(View::kPredictionSummary, facts, views, query)).at(0);
  summary["decisions"] = views.prediction_summary.decisions;
  summary["decisions_compared"] = views.prediction_summary.decisions_compared;
  summary["worst_decision_ids"] = nlohmann::ordered_json::array();
  for (size_t i : views.prediction_summary.worst) {
    summary["worst_decision_ids"].push_back(views.predictions[i].decision_id);
  }
  return summary;
}

}  // namespace

std::string RenderJson(const CostFacts& facts, const ReportViews& views, const ReportQuery& query) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json& q = j["query"];
  q["scope"] = facts.scope;
  q["from"] = FormatRfc3339(facts.from);
  q["to"] = FormatRfc3339(facts.to);
  q["as_of"] = FormatRfc3339(facts.as_of);
  QueryParameters(query, &q);
  j["totals"] = TotalsJson(ComputeTotals(facts, views));
  for (View v : kJsonTables) j[JsonTableName(v)] = TableJson(BuildTable(v, facts, views, query));
  j["predictions"] = PredictionsJson(views.predictions);
  j["prediction_summary"] = PredictionSummaryJson(facts, views, query);
  j["warnings"] = facts.warnings;
  return j.dump(2) + "\n";
}

std::string RenderFleetJson(const FleetParts& fleet, const ReportQuery& query) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json& q = j["query"];
  q["scope"] = fleet.scope;
  q["from"] = FormatRfc3339(fleet.from);
  q["to"] = FormatRfc3339(fleet.to);
  q["clusters"] = nlohmann::ordered_json::array();
  for (const ClusterPart& c : fleet.clusters) {
    nlohmann::ordered_json cj;
    cj["cluster"] = c.cluster;
    cj["db"] = c.db_path;
    cj["scope"] = c.report->facts.scope;
    cj["as_of"] = FormatRfc3339(c.report->facts.as_of);
    cj["totals"] = TotalsJson(c.totals);
    q["clusters"].push_back(std::move(cj));
  }
  QueryParameters(query, &q);
  j["totals"] = TotalsJson(fleet.totals);
  for (View v : kJsonTables) j[JsonTableName(v)] = TableJson(fleet.table(v));
  // Per decision and per cluster: a decision id is its store's.
  nlohmann::ordered_json predictions = nlohmann::ordered_json::array();
  nlohmann::ordered_json summaries = nlohmann::ordered_json::array();
  for (const ClusterPart& c : fleet.clusters) {
    const StoreReport& r = *c.report;
    for (nlohmann::ordered_json& row : PredictionsJson(r.views.predictions)) {
      nlohmann::ordered_json with_cluster;
      with_cluster["cluster"] = c.cluster;
      with_cluster.update(row);
      predictions.push_back(std::move(with_cluster));
    }
    nlohmann::ordered_json summary;
    summary["cluster"] = c.cluster;
    summary.update(PredictionSummaryJson(r.facts, r.views, r.query));
    summaries.push_back(std::move(summary));
  }
  j["predictions"] = std::move(predictions);
  j["prediction_summary"] = std::move(summaries);
  j["warnings"] = fleet.warnings;
  return j.dump(2) + "\n";
}

}  // namespace gpuscaler::report::internal
