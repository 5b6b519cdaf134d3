#include <charconv>
#include <cstdint>
#include <future>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

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

// nlohmann writes a value nested `depth` levels deep exactly as it writes it
// alone with two more spaces per level after every line break (a string
// holds no raw line break), so parts of one document can be dumped apart and
// joined.
void AppendNested(const nlohmann::ordered_json& value, int depth, std::string* out) {
  const std::string text = value.dump(2);
  const std::string pad(static_cast<size_t>(2 * depth), ' ');
  size_t start = 0;
  for (size_t line_end = text.find('\n'); line_end != std::string::npos; line_end = text.find('\n', start)) {
    out->append(text, start, line_end + 1 - start);
    out->append(pad);
    start = line_end + 1;
  }
  out->append(text, start);
}

struct PredictionRow {
  const DecisionPrediction* prediction;
  const std::string* cluster;  // null in a single store's report
};

// One object two levels deep, written field by field as nlohmann's dump(2)
// writes it (numbers and strings through nlohmann's own writer, integers as
// their digits), without building it.
class NestedObjectWriter {
 public:
  explicit NestedObjectWriter(std::string* out) : out_(out) { *out_ += "{\n"; }
  void Field(std::string_view key, int64_t value) {
    Key(key);
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
    out_->append(digits, end);
  }
  void Field(std::string_view key, double value) {
    Key(key);
    *out_ += nlohmann::ordered_json(value).dump();
  }
  void Field(std::string_view key, const std::string& value) {
    Key(key);
    *out_ += nlohmann::ordered_json(value).dump();
  }
  void Close() { *out_ += "\n    }"; }

 private:
  void Key(std::string_view key) {
    if (!first_) *out_ += ",\n";
    first_ = false;
    *out_ += "      \"";
    *out_ += key;  // plain identifiers: nothing to escape
    *out_ += "\": ";
  }
  std::string* out_;
  bool first_ = true;
};

// Predicted vs realized cost of one decision (report/prediction.h) as an
// element of an array one level deep; in a fleet report the row names its
// cluster first.
void AppendPrediction(const PredictionRow& row, std::string* out) {
  const DecisionPrediction& p = *row.prediction;
  *out += "    ";
  NestedObjectWriter w(out);
  if (row.cluster != nullptr) w.Field("cluster", *row.cluster);
  w.Field("decision_id", p.decision_id);
  w.Field("time", FormatRfc3339(p.time));
  w.Field("predicted_usd_per_hour", Round(p.predicted_usd_per_hour, 1e4));
  w.Field("nodes_planned", int64_t{p.nodes_planned});
  w.Field("nodes_launched", int64_t{p.nodes_launched});
  w.Field("nodes_interrupted", int64_t{p.nodes_interrupted});
  w.Field("nodes_running", int64_t{p.nodes_running});
  w.Field("node_hours", Round(p.node_hours, 1e4));
  w.Field("predicted_usd", Round(p.predicted_usd, 1e4));
  w.Field("realized_usd", Round(p.realized_usd, 1e4));
  w.Field("realized_minus_predicted_usd", Round(p.realized_usd - p.predicted_usd, 1e4));
  w.Close();
}

// The rows [begin, end) as elements of an array one level deep, joined by
// commas, without the brackets.
std::string PredictionRowsText(const std::vector<PredictionRow>& rows, size_t begin, size_t end) {
  std::string out;
  out.reserve((end - begin) * 420);
  for (size_t i = begin; i < end; ++i) {
    if (i != begin) out += ",\n";
    AppendPrediction(rows[i], &out);
  }
  return out;
}

// The predictions array one level deep. It is most of a year report's JSON:
// its rows are built and written in two halves, one on another thread.
std::string PredictionsText(const std::vector<PredictionRow>& rows) {
  if (rows.empty()) return "[]";
  const size_t half = rows.size() / 2;
  std::future<std::string> first =
      std::async(std::launch::async, [&] { return PredictionRowsText(rows, 0, half); });
  const std::string second = PredictionRowsText(rows, half, rows.size());
  const std::string first_text = first.get();
  std::string out;
  out.reserve(first_text.size() + second.size() + 8);
  out += "[\n";
  out += first_text;
  if (half != 0) out += ",\n";
  out += second;
  out += "\n  ]";
  return out;
}

// A top-level object whose members are written apart: each value is text
// already nested one level deep.
class ObjectText {
 public:
  void Add(std::string_view key, std::string value_text) {
    members_.emplace_back(nlohmann::ordered_json(std::string(key)).dump(), std::move(value_text));
  }
  void Add(std::string_view key, const nlohmann::ordered_json& value) {
    std::string text;
    AppendNested(value, 1, &text);
    Add(key, std::move(text));
  }
  // As nlohmann's dump(2) of the whole object, with a final line break.
  std::string Finish() const {
    if (members_.empty()) return "{}\n";
    size_t size = 4;
    for (const auto& [key, value] : members_) size += key.size() + value.size() + 6;
    std::string out;
    out.reserve(size);
    out += "{\n";
    for (size_t i = 0; i < members_.size(); ++i) {
      if (i != 0) out += ",\n";
      out += "  ";
      out += members_[i].first;
      out += ": ";
      out += members_[i].second;
    }
    out += "\n}\n";
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> members_;
};

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

// The buy_block view's row as an object, with what it assumes.
nlohmann::ordered_json BuyBlockJson(const ReportViews& views) {
  nlohmann::ordered_json j = TableJson(BuyBlockTable(views)).at(0);
  j["note"] =
      "A what-if on recorded usage: the block holds, at each moment, up to block_count of the on-demand and spot "
      "instances of this type the store recorded then (the dearest first) for the whole range; the rest is still "
      "bought. The planner would have planned differently with the block; this is not a simulation.";
  return j;
}

}  // namespace

std::string RenderJson(const CostFacts& facts, const ReportViews& views, const ReportQuery& query) {
  std::vector<PredictionRow> rows;
  rows.reserve(views.predictions.size());
  for (const DecisionPrediction& p : views.predictions) rows.push_back({&p, nullptr});
  // Most of the text: written on other threads while this one writes the rest.
  std::future<std::string> predictions =
      std::async(std::launch::async, [&] { return PredictionsText(rows); });
  nlohmann::ordered_json q;
  q["scope"] = facts.scope;
  q["from"] = FormatRfc3339(facts.from);
  q["to"] = FormatRfc3339(facts.to);
  q["as_of"] = FormatRfc3339(facts.as_of);
  QueryParameters(query, &q);
  ObjectText out;
  out.Add("query", q);
  out.Add("totals", TotalsJson(ComputeTotals(facts, views)));
  for (View v : kJsonTables) out.Add(JsonTableName(v), TableJson(BuildTable(v, facts, views, query)));
  const nlohmann::ordered_json summary = PredictionSummaryJson(facts, views, query);
  out.Add("predictions", predictions.get());
  out.Add("prediction_summary", summary);
  // Only when there is something to say, so a report of a fleet without
  // reservations reads as before.
  if (!facts.reservations.empty()) {
    nlohmann::ordered_json reservations = ReservationsJson(facts);
    reservations["by_pool"] = TableJson(ReservationsTable(facts));
    out.Add("reservations", reservations);
  }
  if (views.buy_block) out.Add("buy_block", BuyBlockJson(views));
  out.Add("warnings", nlohmann::ordered_json(facts.warnings));
  return out.Finish();
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
  std::vector<PredictionRow> rows;
  nlohmann::ordered_json summaries = nlohmann::ordered_json::array();
  for (const ClusterPart& c : fleet.clusters) {
    const StoreReport& r = *c.report;
    for (const DecisionPrediction& p : r.views.predictions) rows.push_back({&p, &c.cluster});
    nlohmann::ordered_json summary;
    summary["cluster"] = c.cluster;
    summary.update(PredictionSummaryJson(r.facts, r.views, r.query));
    summaries.push_back(std::move(summary));
  }
  // Per cluster with reservations, its single report's `reservations`: a
  // reservation is its account's, and its slots are paid whatever cluster
  // uses them, so nothing is summed across clusters.
  nlohmann::ordered_json reservations = nlohmann::ordered_json::array();
  for (const ClusterPart& c : fleet.clusters) {
    if (c.report->facts.reservations.empty()) continue;
    nlohmann::ordered_json one;
    one["cluster"] = c.cluster;
    one.update(ReservationsJson(c.report->facts));
    reservations.push_back(std::move(one));
  }
  if (!reservations.empty()) j["reservations"] = std::move(reservations);
  ObjectText out;
  for (const auto& member : j.items()) out.Add(member.key(), member.value());
  out.Add("predictions", PredictionsText(rows));
  out.Add("prediction_summary", summaries);
  out.Add("warnings", nlohmann::ordered_json(fleet.warnings));
  return out.Finish();
}

}  // namespace gpuscaler::report::internal
