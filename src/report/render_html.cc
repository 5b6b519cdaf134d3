// A self-contained HTML report: inline CSS, inline SVG charts and a little
// inline script (table sorting, and a JS error box the browser test reads).
// A Content-Security-Policy forbids every fetch, so it renders the same from
// an e-mail attachment.
#include <algorithm>
#include <cmath>
#include <map>

#include "gpuscaler/model/money.h"
#include "html_charts.h"
#include "tables.h"

namespace gpuscaler::report::internal {
namespace {

// Whole cents as dollars: "$1234.56".
std::string UsdOfCents(int64_t cents) { return FormatUsd(static_cast<double>(cents) / 100.0, MoneyStyle::kCents); }

// Cost per clock hour (UTC) of a range of at most two days, from the
// charges (each node's billed time at one price): a charge's cost, minimum
// top-up included, is spread over the hours its time overlaps. Empty labels
// for longer ranges.
struct HourlyCost {
  std::vector<std::string> labels;  // "07-14 13h"
  std::vector<double> on_demand_nodes, spot_nodes, on_demand_equivalent;
};
HourlyCost HourlyCostOf(const CostFacts& facts) {
  constexpr int64_t kHour = 3600;
  constexpr int64_t kMaxHours = 48;
  HourlyCost out;
  const int64_t first = ToUnixSeconds(facts.from) / kHour * kHour;
  const int64_t end = ToUnixSeconds(facts.to);
  const int64_t hours = (end - first + kHour - 1) / kHour;
  if (hours <= 0 || hours > kMaxHours) return out;
  for (int64_t h = 0; h < hours; ++h) {
    const std::string stamp = FormatRfc3339(FromUnixSeconds(first + h * kHour));  // 2026-07-14T13:00:00Z
    out.labels.push_back(stamp.substr(5, 5) + " " + stamp.substr(11, 2) + "h");
  }
  out.on_demand_nodes.assign(static_cast<size_t>(hours), 0);
  out.spot_nodes.assign(static_cast<size_t>(hours), 0);
  out.on_demand_equivalent.assign(static_cast<size_t>(hours), 0);
  for (const Charge& c : facts.charges) {
    const NodeFact& node = facts.nodes[static_cast<size_t>(c.node)];
    const double charge_hours = static_cast<double>(c.billed_seconds) / kHour;
    const double usd = c.usd_per_hour * charge_hours;
    const double equivalent = node.on_demand_usd_per_hour * charge_hours;
    std::vector<double>& by_type = node.capacity_type == CapacityType::kSpot ? out.spot_nodes : out.on_demand_nodes;
    const int64_t t0 = std::max(ToUnixSeconds(c.start), first);
    const int64_t t1 = std::max(t0, std::min(ToUnixSeconds(c.end), end));
    if (t1 == t0) {  // an instant (a minimum top-up alone): its hour takes it all
      const size_t h = static_cast<size_t>(std::clamp<int64_t>((t0 - first) / kHour, 0, hours - 1));
      by_type[h] += usd;
      out.on_demand_equivalent[h] += equivalent;
      continue;
    }
    for (int64_t h = (t0 - first) / kHour; h < hours && first + h * kHour < t1; ++h) {
      const int64_t a = std::max(t0, first + h * kHour), b = std::min(t1, first + (h + 1) * kHour);
      const double share = static_cast<double>(b - a) / static_cast<double>(t1 - t0);
      by_type[static_cast<size_t>(h)] += usd * share;
      out.on_demand_equivalent[static_cast<size_t>(h)] += equivalent * share;
    }
  }
  return out;
}

std::string TableHtml(const Table& t) {
  std::string s = "<section><h2>" + HtmlEscape(t.title) + "</h2><div class=\"scroll\"><table id=\"t-" +
                  std::string(ToString(t.view)) + "\" class=\"sortable\"><thead><tr>";
  for (const std::string& c : t.columns) s += "<th>" + HtmlEscape(c) + "</th>";
  s += "</tr></thead><tbody>";
  for (const std::vector<Cell>& row : t.rows) {
    s += "<tr>";
    for (const Cell& c : row) {
      s += c.number ? "<td class=\"n\" data-v=\"" + c.text + "\">" : "<td>";
      s += HtmlEscape(c.text) + "</td>";
    }
    s += "</tr>";
  }
  if (t.rows.empty()) s += "<tr><td colspan=\"" + std::to_string(t.columns.size()) + "\">no rows</td></tr>";
  return s + "</tbody></table></div></section>";
}

constexpr const char* kStyle = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1f2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.meta{color:#5b6472}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #dde1e7;border-radius:6px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:18px}.card span{color:#5b6472;font-size:12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
svg.chart{width:100%;height:auto;border:1px solid #eef0f3;border-radius:6px}
.ct{font-size:13px;font-weight:600;fill:#1f2430}.yl{font-size:11px;fill:#5b6472;text-anchor:end}
.xl{font-size:10px;fill:#5b6472;text-anchor:middle}.lg{font-size:11px;fill:#1f2430}.grid{stroke:#eef0f3}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:12px}
th,td{border-bottom:1px solid #eef0f3;padding:4px 8px;text-align:left;white-space:nowrap}
th{cursor:pointer;background:#f6f7f9;user-select:none}th[aria-sort=ascending]::after{content:" \25B2"}
th[aria-sort=descending]::after{content:" \25BC"}td.n{text-align:right;font-variant-numeric:tabular-nums}
#js-errors:empty{display:none}#js-errors{color:#b00020;border:1px solid #b00020;padding:8px}
.warn{color:#8a5a00}
)css";

constexpr const char* kScript = R"js(
(function () {
  var box = document.getElementById('js-errors');
  window.addEventListener('error', function (e) { box.textContent += 'error: ' + e.message + '\n'; });
  function value(cell) {
    var v = cell.getAttribute('data-v');
    return v === null ? cell.textContent : parseFloat(v);
  }
  function sortBy(table, column, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = th.getAttribute('aria-sort') !== 'ascending';
    rows.sort(function (a, b) {
      var x = value(a.cells[column] || a.cells[0]), y = value(b.cells[column] || b.cells[0]);
      var c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.addEventListener('click', function () { sortBy(table, i, th); });
    });
  });
  document.body.setAttribute('data-ready', 'true');
})();
)js";

// What a page shows: a single store's report, or a fleet's (several
// stores' facts and views for the charts, joined tables and summed totals).
struct PageInputs {
  std::string scope;
  WallTime from{};
  WallTime to{};
  std::string billed_up_to;  // "running nodes billed up to ..."
  Totals totals;
  std::vector<std::string> warnings;
  // One row of the prediction_summary view's columns, for the cards.
  Table prediction_cards;
  std::vector<const CostFacts*> facts;
  std::vector<const ReportViews*> views;
  std::vector<Table> tables;  // in page order
};

// Several stores' budget months as one: per month, each day's cost summed
// and accumulated, the forecasts and caps summed (each store's cap is the
// query's), complete when every store's month is.
std::vector<BudgetMonth> JoinBudgets(const std::vector<const ReportViews*>& views) {
  if (views.size() == 1) return views.front()->budget;
  std::map<WallTime, BudgetMonth> months;
  std::map<WallTime, std::map<WallTime, double>> days;
  for (const ReportViews* v : views) {
    for (const BudgetMonth& b : v->budget) {
      auto [it, added] = months.emplace(b.month_start, b);
      BudgetMonth& m = it->second;
      if (!added) {
        m.actual_usd += b.actual_usd;
        m.forecast_usd += b.forecast_usd;
        if (m.cap_usd && b.cap_usd) *m.cap_usd += *b.cap_usd;
        m.complete = m.complete && b.complete;
      }
      for (const BudgetDay& d : b.days) days[b.month_start][d.day] += d.cost_usd;
    }
  }
  std::vector<BudgetMonth> out;
  for (auto& [start, m] : months) {
    m.days.clear();
    double cumulative = 0;
    for (const auto& [day, cost] : days[start]) {
      cumulative += cost;
      BudgetDay d;
      d.day = day;
      d.cost_usd = cost;
      d.cumulative_usd = cumulative;
      if (m.cap_usd) d.remaining_usd = *m.cap_usd - cumulative;
      m.days.push_back(d);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::string Page(const PageInputs& in, const ReportQuery& query) {
  const Totals& t = in.totals;
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  s += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; img-src data:\">";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  s += "<title>gpuscaler cost report " + FormatDate(in.from) + " to " + FormatDate(in.to) + "</title>";
  s += "<style>" + std::string(kStyle) + "</style></head><body>";
  s += "<pre id=\"js-errors\"></pre>";
  s += "<h1>GPU fleet cost report</h1>";
  if (!in.scope.empty()) s += "<p class=\"meta\">Covers " + HtmlEscape(in.scope) + ".</p>";
  s += "<p class=\"meta\">" + HtmlEscape(FormatRfc3339(in.from)) + " to " + HtmlEscape(FormatRfc3339(in.to)) +
       " (end exclusive); running nodes billed up to " + HtmlEscape(in.billed_up_to) +
       ". Per-second billing at the price in force, " + std::to_string(query.min_billed.count()) +
       " s minimum; idle is cost no workload had allocated. All amounts USD.</p>";

  auto card = [&](const std::string& value, const std::string& label) {
    s += "<div class=\"card\"><b>" + HtmlEscape(value) + "</b><span>" + HtmlEscape(label) + "</span></div>";
  };
  s += "<div class=\"cards\" id=\"totals\">";
  card(UsdOfCents(t.cost_cents), "total cost");
  card(UsdOfCents(t.attributed_cents), "attributed to workloads");
  card(UsdOfCents(t.idle_cents), "idle");
  card(UsdOfCents(t.on_demand_cents), "on-demand equivalent");
  card(UsdOfCents(t.spot_savings_cents), "spot savings");
  card(FormatFixed(t.savings_pct, 1).append(" %"), "saved vs on-demand");
  card(FormatFixed(t.gpu_hours_paid, 1), "GPU-hours paid");
  card(FormatFixed(t.gpu_hours_allocated, 1), "GPU-hours allocated");
  if (t.gpu_hours_busy) {
    card(FormatFixed(*t.gpu_hours_busy, 1), "GPU-hours busy");
    card(FormatFixed(t.gpu_hours_allocated_idle.value_or(0), 1), "GPU-hours allocated but idle");
  } else {
    card("not measured", "GPU busy time");
  }
  card(FormatFixed(t.gpu_hours_lost, 1) + " (" + UsdOfCents(t.lost_cents) + ")", "GPU-hours lost to interruptions");
  card(std::to_string(t.nodes) + " (" + std::to_string(t.interrupted_nodes) + " interrupted)", "nodes billed");
  s += "</div>";
  for (const std::string& w : in.warnings) s += "<p class=\"warn\">" + HtmlEscape(w) + "</p>";

  // Predicted vs realized: the summary row's cells, so the cards and the
  // table say the same.
  const Table& summary = in.prediction_cards;
  auto summary_cell = [&](const std::string& column) -> const Cell& {
    const auto at = std::find(summary.columns.begin(), summary.columns.end(), column);
    return summary.rows.front()[static_cast<size_t>(at - summary.columns.begin())];
  };
  auto pct_or_dash = [](const Cell& c) { return c.text.empty() ? std::string("—") : c.text + " %"; };
  // A money cell's dollars ("–" without a number).
  auto usd = [&](const std::string& column) {
    return FormatUsd(summary_cell(column).number.value_or(std::nan("")), MoneyStyle::kCents);
  };
  s += "<h2>Predicted vs realized cost of launched nodes</h2><div id=\"prediction-totals\" class=\"cards\">";
  card(usd("predicted_usd"), "predicted (" + summary_cell("decisions").text + " decisions)");
  card(usd("realized_usd"), "realized");
  card(pct_or_dash(summary_cell("error_pct")), "realized vs predicted, in total");
  card(pct_or_dash(summary_cell("median_abs_error_pct")), "median |error| per decision");
  card(pct_or_dash(summary_cell("p90_abs_error_pct")), "p90 |error| per decision");
  s += "</div>";

  // Daily series for the charts.
  std::map<WallTime, std::pair<double, double>> by_day;  // on-demand, spot
  std::map<WallTime, double> od_by_day;
  for (WallTime d = PeriodStart(in.from, Period::kDay); d < in.to; d += Seconds(86400)) by_day[d];
  for (const ReportViews* views : in.views) {
    for (const GroupedRow& r : views->daily_by_capacity) {
      const WallTime d = PeriodStart(r.period_start, Period::kDay);
      (r.keys[0] == "spot" ? by_day[d].second : by_day[d].first) += r.m.cost_usd;
      od_by_day[d] += r.m.on_demand_usd;
    }
  }
  std::vector<std::string> days;
  for (const auto& [d, v] : by_day) days.push_back(FormatDate(d).substr(5));
  // A range of up to two days draws the cost charts by hour (a daily chart
  // of one or two points shows no shape); longer ones by day.
  // Every store's facts cover the same range, hence the same hours.
  HourlyCost hourly = HourlyCostOf(*in.facts.front());
  for (size_t f = 1; f < in.facts.size(); ++f) {
    const HourlyCost more = HourlyCostOf(*in.facts[f]);
    for (size_t h = 0; h < hourly.labels.size() && h < more.labels.size(); ++h) {
      hourly.on_demand_nodes[h] += more.on_demand_nodes[h];
      hourly.spot_nodes[h] += more.spot_nodes[h];
      hourly.on_demand_equivalent[h] += more.on_demand_equivalent[h];
    }
  }
  const bool by_hour = !hourly.labels.empty();
  Series od{"on-demand", "#4c72b0", {}}, spot{"spot", "#55a868", {}};
  Series cost{"actual cost", "#4c72b0", {}}, equivalent{"on-demand equivalent", "#c44e52", {}, true};
  if (by_hour) {
    for (size_t h = 0; h < hourly.labels.size(); ++h) {
      od.values.push_back(hourly.on_demand_nodes[h]);
      spot.values.push_back(hourly.spot_nodes[h]);
      cost.values.push_back(hourly.on_demand_nodes[h] + hourly.spot_nodes[h]);
      equivalent.values.push_back(hourly.on_demand_equivalent[h]);
    }
  } else {
    for (const auto& [d, v] : by_day) {
      od.values.push_back(v.first);
      spot.values.push_back(v.second);
      cost.values.push_back(v.first + v.second);
      equivalent.values.push_back(od_by_day[d]);
    }
  }
  const std::vector<std::string>& cost_labels = by_hour ? hourly.labels : days;
  const std::string per = by_hour ? "hour (UTC)" : "day";
  s += "<h2>Charts</h2><div class=\"charts\">";
  s += StackedBars("chart-daily-cost", std::string(by_hour ? "Hourly" : "Daily") + " cost by capacity type",
                   cost_labels, {od, spot});
  s += Lines("chart-savings", "Spot savings: actual cost vs on-demand equivalent, per " + per, cost_labels,
             {equivalent, cost});
  // Burn-down of the month with the most observed days (the latest on ties).
  const std::vector<BudgetMonth> budget = JoinBudgets(in.views);
  const BudgetMonth* month = nullptr;
  for (const BudgetMonth& b : budget) {
    if (month == nullptr || b.days.size() >= month->days.size()) month = &b;
  }
  if (month != nullptr) {
    std::vector<std::string> labels;
    Series actual{"cumulative cost", "#4c72b0", {}}, cap{"budget", "#c44e52", {}, true},
        forecast{"forecast", "#8172b2", {}, true};
    const WallTime first = month->days.empty() ? month->month_start : month->days.front().day;
    size_t observed = 0;
    for (WallTime d = first; d < month->month_end; d += Seconds(86400), ++observed) {
      labels.push_back(FormatDate(d).substr(5));
      const bool seen = observed < month->days.size();
      actual.values.push_back(seen ? std::optional<double>(month->days[observed].cumulative_usd) : std::nullopt);
      cap.values.push_back(month->cap_usd);
      forecast.values.push_back(std::nullopt);
    }
    if (!month->days.empty() && !labels.empty()) {
      forecast.values[month->days.size() - 1] = month->days.back().cumulative_usd;
      forecast.values.back() = month->forecast_usd;
    }
    std::vector<Series> series = {actual, forecast};
    if (month->cap_usd) series.push_back(cap);
    s += Lines("chart-burndown",
               "Budget burn-down " + FormatDate(month->month_start).substr(0, 7) + ": forecast " +
                   FormatUsd(month->forecast_usd, MoneyStyle::kCents) +
                   (month->cap_usd ? " of " + FormatUsd(*month->cap_usd, MoneyStyle::kCents) : std::string(" (no cap set)")),
               labels, series);
  }
  // Teams of several stores: summed by name, dearest first (as one store's).
  std::vector<std::pair<std::string, double>> teams;
  for (const ReportViews* views : in.views) {
    for (const GroupedRow& r : views->by_team) {
      auto at = std::find_if(teams.begin(), teams.end(), [&](const auto& t) { return t.first == r.keys[0]; });
      if (at == teams.end()) {
        teams.emplace_back(r.keys[0], r.m.cost_usd);
      } else {
        at->second += r.m.cost_usd;
      }
    }
  }
  if (in.views.size() > 1) {
    std::stable_sort(teams.begin(), teams.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  s += HorizontalBars("chart-teams", "Cost by team (idle as its own line)", teams);
  // By the day of the decision; one made before the range whose node
  // started in it counts on the first day.
  if (!by_day.empty()) {
    std::map<WallTime, std::pair<double, double>> predicted_by_day;  // predicted, realized
    for (const auto& [d, v] : by_day) predicted_by_day[d];
    const WallTime first = by_day.begin()->first, last = by_day.rbegin()->first;
    for (const ReportViews* views : in.views) {
      for (const DecisionPrediction& p : views->predictions) {
        const WallTime d = std::clamp(PeriodStart(p.time, Period::kDay), first, last);
        predicted_by_day[d].first += p.predicted_usd;
        predicted_by_day[d].second += p.realized_usd;
      }
    }
    Series predicted{"predicted", "#8172b2", {}, true}, realized{"realized", "#4c72b0", {}};
    for (const auto& [d, v] : predicted_by_day) {
      predicted.values.push_back(v.first);
      realized.values.push_back(v.second);
    }
    s += Lines("chart-predictions", "Launched nodes: predicted vs realized cost, by day of decision", days,
               {predicted, realized});
  }
  s += "</div>";

  for (const Table& table : in.tables) s += TableHtml(table);
  s += "<script>" + std::string(kScript) + "</script></body></html>\n";
  return s;
}

constexpr View kPageTables[] = {
    View::kAllocation, View::kCosts, View::kSavings,           View::kBudget,
    View::kDecisions,  View::kNodes, View::kPredictionSummary, View::kPredictions};

}  // namespace

std::string RenderHtml(const CostFacts& facts, const ReportViews& views, const ReportQuery& query) {
  PageInputs in;
  in.scope = facts.scope;
  in.from = facts.from;
  in.to = facts.to;
  in.billed_up_to = FormatRfc3339(std::min(facts.as_of, facts.to));
  in.totals = ComputeTotals(facts, views);
  in.warnings = facts.warnings;
  in.prediction_cards = BuildTable(View::kPredictionSummary, facts, views, query);
  in.facts = {&facts};
  in.views = {&views};
  for (View v : kPageTables) in.tables.push_back(BuildTable(v, facts, views, query));
  // Only when there is something to show, so a page without reservations
  // reads as before.
  if (!facts.reservations.empty()) in.tables.push_back(ReservationsTable(facts));
  if (views.buy_block) in.tables.push_back(BuyBlockTable(views));
  return Page(in, query);
}

std::string RenderFleetHtml(const FleetParts& fleet, const ReportQuery& query) {
  PageInputs in;
  in.scope = fleet.scope;
  in.from = fleet.from;
  in.to = fleet.to;
  in.billed_up_to = query.as_of ? FormatRfc3339(std::min(*query.as_of, fleet.to)) : "each cluster's last record";
  in.totals = fleet.totals;
  in.warnings = fleet.warnings;
  for (const ClusterPart& c : fleet.clusters) {
    in.facts.push_back(&c.report->facts);
    in.views.push_back(&c.report->views);
  }
  // The cards: the clusters' summary rows summed where they add (decisions,
  // dollars); the percentiles of every cluster's decisions together.
  std::vector<DecisionPrediction> all;
  for (const ReportViews* v : in.views) all.insert(all.end(), v->predictions.begin(), v->predictions.end());
  const PredictionSummary joined = SummarizePredictions(all, 0);
  const Table& per_cluster = fleet.table(View::kPredictionSummary);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(per_cluster.columns.begin(), per_cluster.columns.end(), name) -
                               per_cluster.columns.begin());
  };
  int64_t predicted_cents = 0, realized_cents = 0;
  for (const std::vector<Cell>& row : per_cluster.rows) {
    predicted_cents += std::llround(row[column("predicted_usd")].number.value_or(0) * 100.0);
    realized_cents += std::llround(row[column("realized_usd")].number.value_or(0) * 100.0);
  }
  auto pct = [](std::optional<double> v) { return v ? FormatFixed(*v, 2) : std::string(); };
  std::optional<double> total_error;
  if (joined.predicted_usd > 0)
    total_error = 100.0 * (joined.realized_usd - joined.predicted_usd) / joined.predicted_usd;
  in.prediction_cards.columns = {"decisions", "predicted_usd",        "realized_usd",
                                 "error_pct", "median_abs_error_pct", "p90_abs_error_pct"};
  in.prediction_cards.rows.push_back(
      {Cell{std::to_string(joined.decisions), std::nullopt},
       Cell{FormatCents(predicted_cents), static_cast<double>(predicted_cents) / 100.0},
       Cell{FormatCents(realized_cents), static_cast<double>(realized_cents) / 100.0}, Cell{pct(total_error), std::nullopt},
       Cell{pct(joined.median_abs_error_pct), std::nullopt},
       Cell{pct(joined.p90_abs_error_pct), std::nullopt}});
  for (View v : kPageTables) in.tables.push_back(fleet.table(v));
  // Each cluster's reservations (nothing summed: a reservation is its
  // account's), when any has some.
  if (!fleet.table(View::kReservations).rows.empty()) in.tables.push_back(fleet.table(View::kReservations));
  return Page(in, query);
}

}  // namespace gpuscaler::report::internal
