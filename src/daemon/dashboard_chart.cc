// Time charts for the dashboard, drawn as inline SVG on the server: the page
// shows them without running any script, and every chart has the same
// labelled axes. Also the page's chart sections, from the series and
// budgets of dashboard_figures.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "dashboard.h"
#include "dashboard_figures.h"
#include "gpuscaler/model/escape.h"
#include "gpuscaler/model/money.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler::daemon {
namespace {

constexpr double kWidth = 640, kHeight = 220;
constexpr double kLeft = 52, kRight = 12, kTop = 12, kBottom = 36;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A value axis label: at most 3 significant digits, k for thousands.
std::string ValueLabel(double v) {
  char buf[32];
  if (std::abs(v) >= 10000) {
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1000);
  } else if (std::abs(v) >= 100 || v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2g", v);
  }
  return buf;
}

// "HH:MM" within a day's span, else "MM-DD HH:MM" (UTC).
std::string TimeLabel(WallTime t, bool with_date) {
  const std::string s = FormatRfc3339(t);  // 2026-07-06T12:34:56Z
  return with_date ? s.substr(5, 5) + " " + s.substr(11, 5) : s.substr(11, 5);
}

// A round step for about `ticks` intervals over `span`.
double NiceStep(double span, int ticks) {
  const double raw = span / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

}  // namespace

std::string TimeChartSvg(const std::string& id, const std::string& title, const std::vector<WallTime>& times,
                         const std::vector<ChartSeries>& series, bool stacked, const std::vector<ChartLevel>& levels,
                         const std::string& unit) {
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  std::string out = "<svg id=\"" + HtmlEscape(id) + "\" class=\"chart\" viewBox=\"0 0 640 220\" role=\"img\" aria-label=\"" +
                    HtmlEscape(title) + "\">";
  out += "<title>" + HtmlEscape(title) + "</title>";
  const size_t n = times.size();

  // Value range: 0 to the highest point (stacked: of the sums) or level.
  double max = 0;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (const ChartSeries& s : series) {
      if (i >= s.values.size() || !std::isfinite(s.values[i])) continue;
      sum = stacked ? sum + s.values[i] : std::max(sum, s.values[i]);
    }
    max = std::max(max, sum);
  }
  for (const ChartLevel& l : levels) {
    if (std::isfinite(l.value)) max = std::max(max, l.value);
  }
  const double step = NiceStep(max > 0 ? max : 1, 4);
  max = std::max(step, std::ceil(max / step) * step);
  auto y = [&](double v) { return kTop + plot_h * (1 - v / max); };

  const double t0 = n ? std::chrono::duration<double>(times.front().time_since_epoch()).count() : 0;
  const double t1 = n ? std::chrono::duration<double>(times.back().time_since_epoch()).count() : 0;
  const double span = std::max(1.0, t1 - t0);
  auto x = [&](size_t i) {
    const double t = std::chrono::duration<double>(times[i].time_since_epoch()).count();
    return kLeft + plot_w * (n <= 1 ? 0.5 : (t - t0) / span);
  };

  // Value axis with grid lines.
  out += "<g class=\"axis y-axis\" font-size=\"11\" fill=\"#5b6575\">";
  for (double v = 0; v <= max + step / 2; v += step) {
    out += "<line x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kWidth - kRight) + "\" y1=\"" + Num(y(v)) + "\" y2=\"" +
           Num(y(v)) + "\" stroke=\"#eceef2\"/>";
    out += "<text class=\"tick-label\" x=\"" + Num(kLeft - 4) + "\" y=\"" + Num(y(v) + 4) +
           "\" text-anchor=\"end\">" + ValueLabel(v) + "</text>";
  }
  out += "<text class=\"axis-title\" x=\"4\" y=\"" + Num(kTop - 2) + "\">" + HtmlEscape(unit) + "</text></g>";

  // Time axis: up to 6 labels at evenly spread ticks of the series.
  out += "<g class=\"axis x-axis\" font-size=\"11\" fill=\"#5b6575\"><line x1=\"" + Num(kLeft) + "\" x2=\"" +
         Num(kWidth - kRight) + "\" y1=\"" + Num(kTop + plot_h) + "\" y2=\"" + Num(kTop + plot_h) +
         "\" stroke=\"#8a93a3\"/>";
  if (n > 0) {
    // Labels at evenly spread times over the span (not at series indexes:
    // the points need not be evenly spread in time).
    const bool with_date = span >= 20 * 3600.0;
    const int labels = n == 1 || t1 <= t0 ? 1 : 5;
    for (int k = 0; k < labels; ++k) {
      const double t = labels == 1 ? t0 : t0 + (t1 - t0) * k / (labels - 1);
      const double px = labels == 1 ? kLeft + plot_w / 2 : kLeft + plot_w * (t - t0) / span;
      const WallTime at = WallTime(Seconds(static_cast<int64_t>(std::llround(t))));
      const char* anchor = labels == 1 ? "middle" : k == 0 ? "start" : k + 1 == labels ? "end" : "middle";
      out += "<line x1=\"" + Num(px) + "\" x2=\"" + Num(px) + "\" y1=\"" + Num(kTop + plot_h) + "\" y2=\"" +
             Num(kTop + plot_h + 4) + "\" stroke=\"#8a93a3\"/>";
      out += "<text class=\"tick-label time-label\" data-time=\"" + FormatRfc3339(at) + "\" x=\"" + Num(px) +
             "\" y=\"" + Num(kTop + plot_h + 16) + "\" text-anchor=\"" + anchor + "\">" + TimeLabel(at, with_date) +
             "</text>";
    }
  }
  out += "<text class=\"axis-title\" x=\"" + Num(kLeft + plot_w / 2) + "\" y=\"" + Num(kHeight - 4) +
         "\" text-anchor=\"middle\">time (UTC)</text></g>";

  if (n == 0) {
    out += "<text x=\"" + Num(kLeft + plot_w / 2) + "\" y=\"" + Num(kTop + plot_h / 2) +
           "\" text-anchor=\"middle\" fill=\"#5b6575\">no data yet</text>";
  }

  // Series: a line per series, or stacked areas. NaN values are gaps.
  std::vector<double> base(n, 0);
  for (const ChartSeries& s : series) {
    std::string d;
    bool pen_down = false;
    for (size_t i = 0; i < n && i < s.values.size(); ++i) {
      if (!std::isfinite(s.values[i])) {
        pen_down = false;
        continue;
      }
      const double v = stacked ? base[i] + s.values[i] : s.values[i];
      d += pen_down ? 'L' : 'M';
      d += Num(x(i));
      d += ' ';
      d += Num(y(v));
      pen_down = true;
    }
    if (stacked && !d.empty()) {
      for (size_t i = n; i-- > 0;) {
        d += 'L';
        d += Num(x(i));
        d += ' ';
        d += Num(y(base[i]));
      }
      d += "Z";
      for (size_t i = 0; i < n && i < s.values.size(); ++i) {
        if (std::isfinite(s.values[i])) base[i] += s.values[i];
      }
      out += "<path class=\"series\" data-label=\"" + HtmlEscape(s.label) + "\" d=\"" + d + "\" fill=\"" + s.color +
             "\" fill-opacity=\".55\" stroke=\"" + s.color + "\"/>";
    } else if (!d.empty()) {
      out += "<path class=\"series\" data-label=\"" + HtmlEscape(s.label) + "\" d=\"" + d +
             "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"2\"" +
             (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>";
    }
  }
  for (const ChartLevel& l : levels) {
    if (!std::isfinite(l.value)) continue;
    out += "<g class=\"level " + HtmlEscape(l.css_class) + "\" data-value=\"" + Num(l.value) + "\"><line x1=\"" +
           Num(kLeft) + "\" x2=\"" + Num(kWidth - kRight) + "\" y1=\"" + Num(y(l.value)) + "\" y2=\"" +
           Num(y(l.value)) + "\" stroke=\"" + l.color + "\" stroke-width=\"2\" stroke-dasharray=\"8 4\"/><text x=\"" +
           Num(kWidth - kRight - 4) + "\" y=\"" + Num(y(l.value) - 4) + "\" text-anchor=\"end\" font-size=\"11\" fill=\"" +
           l.color + "\">" + HtmlEscape(l.label) + "</text></g>";
  }
  out += "</svg>";
  // Legend under the chart, in the series' colours.
  out += "<div class=\"legend\">";
  for (const ChartSeries& s : series) {
    out += "<span style=\"color:" + s.color + "\">&#9632; " + HtmlEscape(s.label) + "</span>";
  }
  out += "</div>";
  return out;
}

namespace {

// Burn-down: the month's spend so far (from the series) and its projection
// to the month's end at the current rate, against the global monthly cap.
std::string BurnDownSection(const PublishedState& s) {
  const std::vector<BudgetRow> rows = Budgets(s);
  if (rows.empty()) return "<h2>Burn-down</h2>" + TimeChartSvg("chart-burndown", "Month-to-date spend", {}, {}, false, {}, "USD");
  const BudgetRow& g = rows.front();
  BurnDown burn = BurnDownOf(s, g);
  std::vector<ChartLevel> levels;
  if (g.cap.monthly_usd) {
    levels.push_back({std::string(g.cap.hard ? "hard" : "soft") + " monthly cap " + FormatUsd(*g.cap.monthly_usd, MoneyStyle::kCents),
                      "#c0262d", *g.cap.monthly_usd, "budget-cap monthly-cap"});
  }
  std::string out = "<h2>Burn-down: month to date and projected month end</h2>";
  out += TimeChartSvg("chart-burndown", "Month-to-date spend and its projection to the month's end", burn.times,
                      {{"month to date", "#1d2430", std::move(burn.month_to_date_usd), false},
                       {"projected at the current rate", "#b35c00", std::move(burn.projected_usd), true}},
                      false, levels, "USD");
  if (!g.cap.monthly_usd) out += "<p class=\"note\">No monthly cap is set for the whole fleet.</p>";
  return out;
}

}  // namespace

void AddChartSections(const PublishedState& s, std::map<std::string, std::string>* sections) {
  (*sections)["chart-burndown"] = BurnDownSection(s);
  const DashboardSeries series = SeriesOf(s);
  const std::vector<WallTime>& times = series.times;
  (*sections)["chart-nodes"] = "<h2>Nodes</h2>" + TimeChartSvg("chart-nodes", "Nodes by capacity type", times,
                                                                {{"on-demand", "#1f5fbf", series.on_demand_nodes, false},
                                                                 {"spot", "#e07b00", series.spot_nodes, false}},
                                                                true, {}, "nodes");
  std::vector<ChartLevel> caps;
  std::vector<ChartSeries> spend = {{"spend rate", "#1d2430", series.usd_per_hour, false}};
  if (s.policy && s.policy->budget.global.hourly_usd) {
    const BudgetCap& cap = s.policy->budget.global;
    caps.push_back({std::string(cap.hard ? "hard" : "soft") + " cap " + FormatUsd(*cap.hourly_usd, MoneyStyle::kCents) + "/h", "#c0262d",
                    *cap.hourly_usd, "budget-cap hourly-cap"});
  }
  // The allowance differs from the hourly cap only when a monthly cap binds.
  if (s.policy && s.policy->budget.global.monthly_usd) spend.push_back({"allowed now", "#c0262d", series.allowance_usd_per_hour, true});
  (*sections)["chart-cost"] = "<h2>Spend rate (USD/h)</h2>" +
                              TimeChartSvg("chart-cost", "Spend rate against the hourly budget", times, spend, false, caps, "USD/h");
  (*sections)["chart-queue"] = "<h2>Waiting work</h2>" +
                               TimeChartSvg("chart-queue", "Pending GPU units and queued jobs", times,
                                            {{"pending GPU units", "#6b3fa0", series.pending_units, false},
                                             {"queued jobs", "#17813a", series.queued_jobs, false}},
                                            false, {}, "units");
}

}  // namespace gpuscaler::daemon
