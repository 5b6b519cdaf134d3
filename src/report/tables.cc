#include "tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gpuscaler::report::internal {

Cell Text(std::string s) { return Cell{std::move(s), std::nullopt}; }
Cell Money(int64_t cents) { return Cell{FormatCents(cents), static_cast<double>(cents) / 100.0}; }
Cell Number(double v, int decimals) {
  Cell c{FormatFixed(v, decimals), std::nullopt};
  c.number = std::strtod(c.text.c_str(), nullptr);
  return c;
}
Cell Integer(int64_t v) { return Cell{std::to_string(v), static_cast<double>(v)}; }

namespace {

double Hours(double gpu_seconds) { return gpu_seconds / 3600.0; }

Cell Time(std::optional<WallTime> t) { return t ? Text(FormatRfc3339(*t)) : Text(""); }

// Rounds one money column of `rows` to cents, preserving its total (by
// default the column's rounded sum).
template <typename Row, typename Get>
std::vector<int64_t> CentsOf(const std::vector<Row>& rows, Get&& get, std::optional<int64_t> total = std::nullopt) {
  std::vector<double> usd;
  usd.reserve(rows.size());
  for (const Row& r : rows) usd.push_back(get(r));
  return CentsPreservingTotal(usd, total);
}

int64_t Sum(const std::vector<int64_t>& cents) {
  int64_t sum = 0;
  for (int64_t c : cents) sum += c;
  return sum;
}

const std::vector<std::string> kMetricColumns = {
    "cost_usd",       "idle_usd",       "on_demand_equivalent_usd", "savings_usd",    "gpu_hours_paid",
    "gpu_hours_allocated", "gpu_hours_busy", "gpu_hours_allocated_idle", "gpu_hours_idle", "gpu_hours_lost",
    "lost_usd"};

// Busy GPU-hours, and allocated-but-idle ones (allocated - busy, where busy
// is measured); empty cells (JSON null) where allocated time has no
// measured busy time: not measured is not "all busy", nor "all idle".
Cell BusyHours(const Metrics& m) {
  if (m.gpu_seconds_allocated > 0 && m.gpu_seconds_busy_measured <= 0) return Text("");
  return Number(Hours(m.gpu_seconds_busy), 3);
}
Cell AllocatedIdleHours(const Metrics& m) {
  if (m.gpu_seconds_allocated > 0 && m.gpu_seconds_busy_measured <= 0) return Text("");
  return Number(Hours(std::max(0.0, m.gpu_seconds_busy_measured - m.gpu_seconds_busy)), 3);
}

// Money of grouped rows in cents, each total rounded once. The cost total
// is the rounded sum of cost; attributed cost is rounded preserving its
// rounded total, idle cost preserving the rest of the cost total, savings
// preserving their rounded total (largest remainder). Cost and the
// on-demand equivalent are derived, so on every row and in every total
// cost = attributed + idle and on-demand equivalent = cost + savings to the
// cent, a line whose savings or attribution is zero shows exactly 0, and the
// columns add up to the totals (ComputeTotals rounds the same way).
struct RowCents {
  std::vector<int64_t> attributed, idle, cost, savings, on_demand;
};
template <typename Row>
RowCents MoneyOf(const std::vector<Row>& rows) {
  RowCents c;
  double cost = 0;
  for (const Row& r : rows) cost += r.m.cost_usd;
  c.attributed = CentsOf(rows, [](const Row& r) { return r.m.cost_usd - r.m.idle_usd; });
  c.idle = CentsOf(rows, [](const Row& r) { return r.m.idle_usd; }, std::llround(cost * 100.0) - Sum(c.attributed));
  c.savings = CentsOf(rows, [](const Row& r) { return r.m.savings_usd(); });
  for (size_t i = 0; i < rows.size(); ++i) {
    c.cost.push_back(c.attributed[i] + c.idle[i]);
    c.on_demand.push_back(c.cost[i] + c.savings[i]);
  }
  return c;
}

// The metric columns of grouped rows, each money column cent-exact.
void AddMetricColumns(const std::vector<GroupedRow>& rows, std::vector<std::vector<Cell>>* out) {
  const RowCents money = MoneyOf(rows);
  const std::vector<int64_t> lost = CentsOf(rows, [](const GroupedRow& r) { return r.m.lost_usd; });
  for (size_t i = 0; i < rows.size(); ++i) {
    const Metrics& m = rows[i].m;
    std::vector<Cell>& cells = (*out)[i];
    cells.push_back(Money(money.cost[i]));
    cells.push_back(Money(money.idle[i]));
    cells.push_back(Money(money.on_demand[i]));
    cells.push_back(Money(money.savings[i]));
    cells.push_back(Number(Hours(m.gpu_seconds_paid), 3));
    cells.push_back(Number(Hours(m.gpu_seconds_allocated), 3));
    cells.push_back(BusyHours(m));
    cells.push_back(AllocatedIdleHours(m));
    cells.push_back(Number(Hours(m.gpu_seconds_paid - m.gpu_seconds_allocated), 3));
    cells.push_back(Number(Hours(m.gpu_seconds_lost), 3));
    cells.push_back(Money(lost[i]));
  }
}

// A relative error in percent with two decimals; empty when undefined.
Cell ErrorPct(std::optional<double> pct) { return pct ? Number(*pct, 2) : Text(""); }

// The predictions view: every decision in CSV, the worst ones elsewhere.
Table PredictionsTable(const ReportViews& views, const ReportQuery& query) {
  Table t;
  t.view = View::kPredictions;
  // Predicted and realized dollars are rounded to cents preserving their
  // totals over every decision, so the rows add up to the summary's.
  const std::vector<int64_t> predicted =
      CentsOf(views.predictions, [](const DecisionPrediction& p) { return p.predicted_usd; });
  const std::vector<int64_t> realized =
      CentsOf(views.predictions, [](const DecisionPrediction& p) { return p.realized_usd; });
  t.columns = {"decision_id",   "decided_at",   "nodes_planned", "nodes_launched",
               "nodes_interrupted", "nodes_running", "node_hours", "predicted_usd_per_hour",
               "predicted_usd", "realized_usd", "realized_minus_predicted_usd", "error_pct"};
  // CSV lists every decision, by id; HTML the worst predictions, worst first.
  std::vector<size_t> order;
  if (query.format == Format::kCsv) {
    t.title = "Predicted vs realized cost per decision";
    for (size_t i = 0; i < views.predictions.size(); ++i) order.push_back(i);
  } else {
    t.title = "Worst predictions: decisions whose launched nodes cost most unlike the plan";
    order = views.prediction_summary.worst;
  }
  for (size_t i : order) {
    const DecisionPrediction& p = views.predictions[i];
    t.rows.push_back({Integer(p.decision_id), Time(p.time), Integer(p.nodes_planned), Integer(p.nodes_launched),
                      Integer(p.nodes_interrupted), Integer(p.nodes_running), Number(p.node_hours, 4),
                      Number(p.predicted_usd_per_hour, 4), Money(predicted[i]), Money(realized[i]),
                      Money(realized[i] - predicted[i]), ErrorPct(RelativeErrorPct(p))});
  }
  return t;
}

// The prediction_summary view: one row.
Table PredictionSummaryTable(const ReportViews& views) {
  Table t;
  t.view = View::kPredictionSummary;
  t.title = "How well the predictions held";
  t.columns = {"decisions",    "decisions_compared", "predicted_usd",         "realized_usd",
               "realized_minus_predicted_usd", "error_pct", "median_abs_error_pct", "p90_abs_error_pct",
               "worst_decision_ids"};
  const PredictionSummary& s = views.prediction_summary;
  const std::vector<int64_t> predicted =
      CentsOf(views.predictions, [](const DecisionPrediction& p) { return p.predicted_usd; });
  const std::vector<int64_t> realized =
      CentsOf(views.predictions, [](const DecisionPrediction& p) { return p.realized_usd; });
  int64_t predicted_cents = 0, realized_cents = 0;
  for (int64_t c : predicted) predicted_cents += c;
  for (int64_t c : realized) realized_cents += c;
  std::optional<double> total_error;
  if (s.predicted_usd > 0) total_error = 100.0 * (s.realized_usd - s.predicted_usd) / s.predicted_usd;
  std::string worst;
  for (size_t i : s.worst) {
    if (!worst.empty()) worst += ' ';
    worst += std::to_string(views.predictions[i].decision_id);
  }
  t.rows.push_back({Integer(s.decisions), Integer(s.decisions_compared), Money(predicted_cents),
                    Money(realized_cents), Money(realized_cents - predicted_cents), ErrorPct(total_error),
                    ErrorPct(s.median_abs_error_pct), ErrorPct(s.p90_abs_error_pct), Text(worst)});
  return t;
}

}  // namespace

std::string FormatCents(int64_t cents) {
  const bool negative = cents < 0;
  const int64_t a = negative ? -cents : cents;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%s%lld.%02lld", negative ? "-" : "", static_cast<long long>(a / 100),
                static_cast<long long>(a % 100));
  return buf;
}

std::string FormatFixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string FormatDate(WallTime t) { return FormatRfc3339(t).substr(0, 10); }

std::string RenderCsv(const Table& table) {
  // RFC 4180: CRLF line ends, a header line, quoted fields where needed.
  std::string out;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (c > 0) out += ',';
    out += CsvField(table.columns[c]);
  }
  out += "\r\n";
  for (const std::vector<Cell>& row : table.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += ',';
      out += CsvField(row[c].text);
    }
    out += "\r\n";
  }
  return out;
}

Totals ComputeTotals(const CostFacts& facts, const ReportViews&) {
  Totals t;
  // Each quantity is rounded once, from its unrounded total; cost and the
  // on-demand equivalent are derived, as on every row (MoneyOf).
  t.cost_cents = std::llround(facts.total.cost_usd * 100.0);
  t.attributed_cents = std::llround((facts.total.cost_usd - facts.total.idle_usd) * 100.0);
  t.idle_cents = t.cost_cents - t.attributed_cents;
  t.lost_cents = std::llround(facts.total.lost_usd * 100.0);
  // Savings split by capacity type, the parts summing to the total: with
  // on-demand nodes saving nothing, spot savings are all the savings.
  double spot_savings = 0;
  double on_demand_savings = 0;
  for (const NodeFact& n : facts.nodes) {
    (n.capacity_type == CapacityType::kSpot ? spot_savings : on_demand_savings) += n.m.savings_usd();
    if (n.billed_seconds > 0) ++t.nodes;
    if (n.billed_seconds > 0 && n.cause == "interrupted") ++t.interrupted_nodes;
  }
  const std::vector<int64_t> parts =
      CentsPreservingTotal({spot_savings, on_demand_savings}, std::llround(facts.total.savings_usd() * 100.0));
  t.spot_savings_cents = parts[0];
  t.savings_cents = parts[0] + parts[1];
  t.on_demand_cents = t.cost_cents + t.savings_cents;
  t.savings_pct = facts.total.on_demand_usd > 0 ? 100.0 * facts.total.savings_usd() / facts.total.on_demand_usd : 0;
  t.gpu_hours_paid = Hours(facts.total.gpu_seconds_paid);
  t.gpu_hours_allocated = Hours(facts.total.gpu_seconds_allocated);
  if (facts.total.gpu_seconds_busy_measured > 0 || facts.total.gpu_seconds_allocated <= 0) {
    t.gpu_hours_busy = Hours(facts.total.gpu_seconds_busy);
    t.gpu_hours_allocated_idle =
        Hours(std::max(0.0, facts.total.gpu_seconds_busy_measured - facts.total.gpu_seconds_busy));
  }
  t.gpu_hours_lost = Hours(facts.total.gpu_seconds_lost);
  return t;
}

Table BuildTable(View view, const CostFacts& facts, const ReportViews& views, const ReportQuery& query) {
  Table t;
  t.view = view;
  switch (view) {
    case View::kCosts: {
      t.title = "Cost by " + std::string(ToString(views.period));
      t.columns = {"period_start", "period_end"};
      for (Dimension d : views.group_by) {
        t.columns.emplace_back(ToString(d));
        t.title += " × " + std::string(ToString(d));
      }
      t.columns.insert(t.columns.end(), kMetricColumns.begin(), kMetricColumns.end());
      t.rows.resize(views.costs.size());
      for (size_t i = 0; i < views.costs.size(); ++i) {
        const GroupedRow& r = views.costs[i];
        t.rows[i].push_back(Text(FormatRfc3339(r.period_start)));
        t.rows[i].push_back(Text(FormatRfc3339(r.period_end)));
        for (const std::string& k : r.keys) t.rows[i].push_back(Text(k));
      }
      AddMetricColumns(views.costs, &t.rows);
      break;
    }
    case View::kAllocation: {
      t.title = "Attribution by class and team (idle as its own line)";
      t.columns = {"class", "team"};
      t.columns.insert(t.columns.end(), kMetricColumns.begin(), kMetricColumns.end());
      t.columns.push_back("share_pct");
      t.rows.resize(views.allocation.size());
      for (size_t i = 0; i < views.allocation.size(); ++i) {
        for (const std::string& k : views.allocation[i].keys) t.rows[i].push_back(Text(k));
      }
      AddMetricColumns(views.allocation, &t.rows);
      for (size_t i = 0; i < views.allocation.size(); ++i) {
        const double total = facts.total.cost_usd;
        t.rows[i].push_back(Number(total > 0 ? 100.0 * views.allocation[i].m.cost_usd / total : 0, 2));
      }
      break;
    }
    case View::kSavings: {
      t.title = "Spot savings by " + std::string(ToString(views.period));
      t.columns = {"period_start", "period_end", "capacity_type", "cost_usd", "on_demand_equivalent_usd",
                   "savings_usd", "savings_pct"};
      const RowCents money = MoneyOf(views.savings);
      for (size_t i = 0; i < views.savings.size(); ++i) {
        const GroupedRow& r = views.savings[i];
        t.rows.push_back({Text(FormatRfc3339(r.period_start)), Text(FormatRfc3339(r.period_end)), Text(r.keys[0]),
                          Money(money.cost[i]), Money(money.on_demand[i]), Money(money.savings[i]),
                          Number(r.m.on_demand_usd > 0 ? 100.0 * r.m.savings_usd() / r.m.on_demand_usd : 0, 2)});
      }
      break;
    }
    case View::kBudget: {
      t.title = "Budget burn-down by month";
      t.columns = {"month", "day", "cost_usd", "cumulative_usd", "budget_usd", "remaining_usd",
                   "forecast_month_end_usd", "month_complete"};
      for (const BudgetMonth& b : views.budget) {
        const std::vector<int64_t> cost = CentsOf(b.days, [](const BudgetDay& d) { return d.cost_usd; });
        const bool has_cap = b.cap_usd.has_value();
        const int64_t cap = has_cap ? std::llround(*b.cap_usd * 100.0) : 0;
        const int64_t forecast = std::llround(b.forecast_usd * 100.0);
        int64_t cumulative = 0;
        for (size_t i = 0; i < b.days.size(); ++i) {
          cumulative += cost[i];
          t.rows.push_back({Text(FormatDate(b.month_start).substr(0, 7)), Text(FormatDate(b.days[i].day)),
                            Money(cost[i]), Money(cumulative), has_cap ? Money(cap) : Text(""),
                            has_cap ? Money(cap - cumulative) : Text(""), Money(forecast),
                            Text(b.complete ? "true" : "false")});
        }
      }
      break;
    }
    case View::kDecisions: {
      t.title = "Top decisions by cost: why these nodes exist";
      t.columns = {"decision_id", "decided_at", "source", "policy", "summary", "reason", "nodes", "cost_usd",
                   "on_demand_equivalent_usd", "instance_ids"};
      for (const DecisionCost& d : views.decisions) {
        std::string ids;
        for (const std::string& id : d.instance_ids) {
          if (!ids.empty()) ids += ' ';
          ids += id;
        }
        t.rows.push_back({Integer(d.decision_id), Time(d.time), Text(d.source), Text(d.policy_name), Text(d.summary),
                          Text(d.reason), Integer(static_cast<int64_t>(d.instance_ids.size())),
                          Money(std::llround(d.m.cost_usd * 100.0)), Money(std::llround(d.m.on_demand_usd * 100.0)),
                          Text(ids)});
      }
      break;
    }
    case View::kPredictions:
      return PredictionsTable(views, query);
    case View::kPredictionSummary:
      return PredictionSummaryTable(views);
    case View::kReservations:
      return ReservationsTable(facts);
    case View::kBuyBlock:
      return BuyBlockTable(views);
    case View::kNodes: {
      t.title = "Nodes by cost";
      t.columns = {"instance_id", "node_id", "pool", "region", "zone", "instance_type", "capacity_type", "gpus",
                   "launched_at", "ended_at", "cause", "price_changes", "billed_hours", "cost_usd",
                   "on_demand_equivalent_usd", "idle_usd", "gpu_hours_allocated", "gpu_hours_lost", "decision_id",
                   "reason"};
      // CSV lists every node; JSON and HTML the top ones.
      const bool all = query.format == Format::kCsv;
      const std::vector<size_t>& order = all ? views.nodes_by_cost : views.top_nodes;
      for (size_t i : order) {
        const NodeFact& n = facts.nodes[i];
        t.rows.push_back({Text(n.instance_id), Text(n.node_id), Text(n.pool), Text(n.region), Text(n.zone),
                          Text(n.instance_type), Text(std::string(ToString(n.capacity_type))), Integer(n.gpu_count),
                          Time(n.launch), Time(n.end), Text(n.cause), Integer(n.price_changes),
                          Number(static_cast<double>(n.billed_seconds) / 3600.0, 4),
                          Money(std::llround(n.m.cost_usd * 100.0)), Money(std::llround(n.m.on_demand_usd * 100.0)),
                          Money(std::llround(n.m.idle_usd * 100.0)), Number(Hours(n.m.gpu_seconds_allocated), 3),
                          Number(Hours(n.m.gpu_seconds_lost), 3), Integer(n.decision_id), Text(n.reason)});
      }
      break;
    }
  }
  return t;
}

}  // namespace gpuscaler::report::internal
