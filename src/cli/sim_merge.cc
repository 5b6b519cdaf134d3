// `gpuscaler sim merge DIR [--format csv|json|html]`: the table of a sweep's
// finished cells (each cell's own run), the Pareto front of mean cost, mean
// GPU-hours lost and mean p95 queue wait per trace and market, the best
// point per trade-off and the parameters that move the results most
// (docs/simulator.md, "Policy sweeps").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "gpuscaler/model/escape.h"
#include "gpuscaler/model/money.h"

namespace gpuscaler::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct CellRow {
  Json inputs;  // the cell's inputs (summary.json)
  Json run;     // the cell's own run in its sim JSON
};

// One (trace, market, policy, overrides): its seeds' mean objectives.
struct Point {
  std::string trace, market, policy;
  Json overrides;
  std::array<double, 3> mean{};  // cost USD, GPU-hours lost, p95 wait s
  int seeds = 0;
  bool on_front = false;
  std::string Label() const {
    std::string s = policy;
    for (const auto& [path, value] : overrides.items()) s += " " + path + "=" + value.get<std::string>();
    return s;
  }
};

// Whether a is at least as good as b on every objective and better on one.
bool Dominates(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  bool better = false;
  for (size_t k = 0; k < 3; ++k) {
    if (a[k] > b[k]) return false;
    better |= a[k] < b[k];
  }
  return better;
}

std::vector<Point> MeanPoints(const std::vector<CellRow>& rows) {
  std::map<std::string, Point> points;
  for (const CellRow& r : rows) {
    const std::string key = r.inputs["trace"].get<std::string>() + "\n" + r.inputs["market"].get<std::string>() +
                            "\n" + r.inputs["policy"].get<std::string>() + "\n" + r.inputs["overrides"].dump();
    Point& p = points[key];
    p.trace = r.inputs["trace"];
    p.market = r.inputs["market"];
    p.policy = r.inputs["policy"];
    p.overrides = r.inputs["overrides"];
    p.mean[0] += r.run["total_cost_usd"].get<double>();
    p.mean[1] += r.run["gpu_hours_lost"].get<double>();
    p.mean[2] += r.run["queue_wait_s"]["p95"].get<double>();
    p.seeds += 1;
  }
  std::vector<Point> out;
  for (auto& [key, p] : points) {
    for (double& x : p.mean) x /= p.seeds;
    out.push_back(std::move(p));
  }
  for (Point& p : out) {
    p.on_front = std::none_of(out.begin(), out.end(), [&](const Point& q) {
      return q.trace == p.trace && q.market == p.market && Dominates(q.mean, p.mean);
    });
  }
  return out;
}

bool SamePoint(const Point& p, const CellRow& r) {
  return p.trace == r.inputs["trace"] && p.market == r.inputs["market"] && p.policy == r.inputs["policy"] &&
         p.overrides == r.inputs["overrides"];
}

Json PointJson(const Point& p) {
  return {{"trace", p.trace},         {"market", p.market},
          {"policy", p.policy},       {"overrides", p.overrides},
          {"seeds", p.seeds},         {"mean_total_cost_usd", p.mean[0]},
          {"mean_gpu_hours_lost", p.mean[1]}, {"mean_queue_wait_p95_s", p.mean[2]}};
}

// The front point best on objective k (ties: the cheaper).
const Point* BestOn(const std::vector<const Point*>& front, size_t k) {
  const Point* best = nullptr;
  for (const Point* p : front) {
    if (best == nullptr || p->mean[k] < best->mean[k] || (p->mean[k] == best->mean[k] && p->mean[0] < best->mean[0])) {
      best = p;
    }
  }
  return best;
}

// Per overridden path, the spread of the mean cost, GPU-hours lost and p95
// wait across its values (each value's mean over every other parameter and
// seed), as a share of the overall mean: the parameters that matter most
// come first.
struct Effect {
  std::string path;
  std::array<double, 3> spread{};  // relative to the overall mean
  std::map<std::string, std::array<double, 3>> by_value;
};

std::vector<Effect> Effects(const std::vector<CellRow>& rows) {
  std::map<std::string, std::map<std::string, std::pair<std::array<double, 3>, int>>> sums;
  std::array<double, 3> overall{};
  for (const CellRow& r : rows) {
    const std::array<double, 3> v = {r.run["total_cost_usd"].get<double>(), r.run["gpu_hours_lost"].get<double>(),
                                     r.run["queue_wait_s"]["p95"].get<double>()};
    for (size_t k = 0; k < 3; ++k) overall[k] += v[k] / static_cast<double>(rows.size());
    for (const auto& [path, value] : r.inputs["overrides"].items()) {
      auto& [sum, n] = sums[path][value.get<std::string>()];
      for (size_t k = 0; k < 3; ++k) sum[k] += v[k];
      n += 1;
    }
  }
  std::vector<Effect> out;
  for (const auto& [path, values] : sums) {
    Effect e;
    e.path = path;
    std::array<double, 3> low{}, high{};
    low.fill(INFINITY);
    high.fill(-INFINITY);
    for (const auto& [value, sum_n] : values) {
      std::array<double, 3> mean{};
      for (size_t k = 0; k < 3; ++k) {
        mean[k] = sum_n.first[k] / sum_n.second;
        low[k] = std::min(low[k], mean[k]);
        high[k] = std::max(high[k], mean[k]);
      }
      e.by_value[value] = mean;
    }
    for (size_t k = 0; k < 3; ++k) e.spread[k] = overall[k] > 0 ? (high[k] - low[k]) / overall[k] : 0;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const Effect& a, const Effect& b) {
    return a.spread[0] + a.spread[1] + a.spread[2] > b.spread[0] + b.spread[1] + b.spread[2];
  });
  return out;
}

std::string Html(std::string_view s) { return HtmlEscape(s); }

std::string Num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// "Nice" axis ticks (1, 2 or 5 times a power of ten) covering [0, max].
std::vector<double> Ticks(double max) {
  if (max <= 0) return {0, 1};
  const double raw = max / 5;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (power * m >= raw) {
      step = power * m;
      break;
    }
  }
  std::vector<double> ticks;
  for (double t = 0; t <= max + step * 0.999; t += step) ticks.push_back(t);
  return ticks;
}

// One trace and market: cost (x) against GPU-hours lost (y), the point's
// area after its p95 wait, the front filled and joined.
std::string Scatter(const std::vector<const Point*>& points, const std::string& id) {
  constexpr double kW = 720, kH = 420, kLeft = 80, kRight = 20, kTop = 20, kBottom = 60;
  double max_x = 0, max_y = 0, max_wait = 0;
  for (const Point* p : points) {
    max_x = std::max(max_x, p->mean[0]);
    max_y = std::max(max_y, p->mean[1]);
    max_wait = std::max(max_wait, p->mean[2]);
  }
  const std::vector<double> xt = Ticks(max_x), yt = Ticks(max_y);
  const double x_end = xt.back(), y_end = yt.back();
  const auto X = [&](double v) { return kLeft + (kW - kLeft - kRight) * v / x_end; };
  const auto Y = [&](double v) { return kH - kBottom - (kH - kTop - kBottom) * v / y_end; };
  std::string svg = "<svg id=\"" + Html(id) + "\" class=\"scatter\" viewBox=\"0 0 " + Num(kW, 0) + " " + Num(kH, 0) +
                    "\" role=\"img\" aria-label=\"mean cost against GPU-hours lost\">";
  for (double t : xt) {
    svg += "<line class=\"grid\" x1=\"" + Num(X(t), 1) + "\" y1=\"" + Num(kTop, 0) + "\" x2=\"" + Num(X(t), 1) +
           "\" y2=\"" + Num(kH - kBottom, 0) + "\"/><text class=\"tick\" x=\"" + Num(X(t), 1) + "\" y=\"" +
           Num(kH - kBottom + 18, 0) + "\" text-anchor=\"middle\">" + FormatUsd(t, MoneyStyle::kAxisTick) + "</text>";
  }
  for (double t : yt) {
    svg += "<line class=\"grid\" x1=\"" + Num(kLeft, 0) + "\" y1=\"" + Num(Y(t), 1) + "\" x2=\"" + Num(kW - kRight, 0) +
           "\" y2=\"" + Num(Y(t), 1) + "\"/><text class=\"tick\" x=\"" + Num(kLeft - 8, 0) + "\" y=\"" +
           Num(Y(t) + 4, 1) + "\" text-anchor=\"end\">" + Num(t, t < 10 ? 1 : 0) + "</text>";
  }
  svg += "<text class=\"axis\" x=\"" + Num((kLeft + kW - kRight) / 2, 0) + "\" y=\"" + Num(kH - 14, 0) +
         "\" text-anchor=\"middle\">mean total cost (USD)</text>";
  svg += "<text class=\"axis\" transform=\"translate(18 " + Num((kTop + kH - kBottom) / 2, 0) +
         ") rotate(-90)\" text-anchor=\"middle\">mean GPU-hours lost</text>";
  std::vector<const Point*> front;
  for (const Point* p : points) {
    if (p->on_front) front.push_back(p);
  }
  std::sort(front.begin(), front.end(), [](const Point* a, const Point* b) { return a->mean[0] < b->mean[0]; });
  if (front.size() > 1) {
    svg += "<polyline class=\"front\" points=\"";
    for (const Point* p : front) svg += Num(X(p->mean[0]), 1) + "," + Num(Y(p->mean[1]), 1) + " ";
    svg += "\"/>";
  }
  for (const Point* p : points) {
    const double r = 4 + 10 * (max_wait > 0 ? std::sqrt(p->mean[2] / max_wait) : 0);
    svg += "<circle class=\"" + std::string(p->on_front ? "point on-front" : "point") + "\" cx=\"" +
           Num(X(p->mean[0]), 1) + "\" cy=\"" + Num(Y(p->mean[1]), 1) + "\" r=\"" + Num(r, 1) + "\"><title>" +
           Html(p->Label()) + ": " + FormatUsd(p->mean[0], MoneyStyle::kCents) + ", " + Num(p->mean[1], 2) + " GPU-h lost, p95 wait " +
           Num(p->mean[2], 0) + " s</title></circle>";
  }
  return svg + "</svg>";
}

std::string MergeHtml(const std::string& dir, const std::vector<CellRow>& rows, const std::vector<Point>& points,
                      size_t unfinished) {
  std::string h = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>gpuscaler sweep</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid #dde;padding:4px 10px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f3f4f8}
tr.on-front td{font-weight:600}
.scatter{width:100%;max-width:720px;height:auto;background:#fff;border:1px solid #dde}
.grid{stroke:#eef}.tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}
.point{fill:none;stroke:#6b7cff;stroke-width:1.5}.on-front{fill:#2b3fd6;fill-opacity:.75;stroke:#1a2a9c}
.front{fill:none;stroke:#2b3fd6;stroke-dasharray:4 3}
.best{list-style:none;padding:0}.best li{margin:4px 0}
</style></head><body>
)";
  h += "<h1>gpuscaler sweep: " + Html(dir) + "</h1>\n<p id=\"counts\">" + std::to_string(rows.size()) +
       " finished cell(s), " + std::to_string(points.size()) + " (policy, parameters) point(s)" +
       (unfinished > 0 ? ", " + std::to_string(unfinished) + " cell(s) without a result yet" : "") +
       ". A point is the mean over its seeds; it is on the Pareto front when no other point of its trace and "
       "market is at least as good on mean cost, mean GPU-hours lost and mean p95 queue wait and better on one. "
       "The circle's area grows with the p95 wait; filled circles are on the front.</p>\n";
  std::map<std::pair<std::string, std::string>, std::vector<const Point*>> groups;
  for (const Point& p : points) groups[{p.trace, p.market}].push_back(&p);
  int section = 0;
  for (const auto& [key, group] : groups) {
    ++section;
    h += "<section class=\"trace\"><h2>" + Html(key.first) + " on market " + Html(key.second) + "</h2>\n";
    h += Scatter(group, "chart-" + std::to_string(section)) + "\n";
    std::vector<const Point*> front;
    for (const Point* p : group) {
      if (p->on_front) front.push_back(p);
    }
    h += "<ul class=\"best\">";
    const char* what[3] = {"cheapest", "least work lost", "shortest p95 wait"};
    for (size_t k = 0; k < 3; ++k) {
      const Point* b = BestOn(front, k);
      if (b == nullptr) continue;
      h += "<li><b>" + std::string(what[k]) + ":</b> " + Html(b->Label()) + " (" + FormatUsd(b->mean[0], MoneyStyle::kCents) + ", " +
           Num(b->mean[1], 2) + " GPU-h lost, p95 " + Num(b->mean[2], 0) + " s)</li>";
    }
    h += "</ul>\n<table id=\"t-points-" + std::to_string(section) +
         "\"><tr><th>policy and parameters</th><th>seeds</th><th>mean cost USD</th><th>mean GPU-h lost</th>"
         "<th>mean p95 wait s</th><th>front</th></tr>";
    std::vector<const Point*> sorted = group;
    std::sort(sorted.begin(), sorted.end(), [](const Point* a, const Point* b) { return a->mean[0] < b->mean[0]; });
    for (const Point* p : sorted) {
      h += std::string("<tr") + (p->on_front ? " class=\"on-front\"" : "") + "><td>" + Html(p->Label()) + "</td><td>" +
           std::to_string(p->seeds) + "</td><td>" + Num(p->mean[0], 2) + "</td><td>" + Num(p->mean[1], 2) +
           "</td><td>" + Num(p->mean[2], 0) + "</td><td>" + (p->on_front ? "yes" : "") + "</td></tr>";
    }
    h += "</table></section>\n";
  }
  const std::vector<Effect> effects = Effects(rows);
  if (!effects.empty()) {
    h += "<h2>Parameters that matter most</h2>\n<p>Each parameter's values, averaged over every other parameter, "
         "trace and seed; the spread is the largest difference between its values as a share of the overall "
         "mean.</p>\n<table id=\"t-effects\"><tr><th>parameter = value</th><th>mean cost USD</th>"
         "<th>mean GPU-h lost</th><th>mean p95 wait s</th></tr>";
    for (const Effect& e : effects) {
      h += "<tr><td><b>" + Html(e.path) + "</b> (spread: cost " + Num(100 * e.spread[0], 1) + " %, lost " +
           Num(100 * e.spread[1], 1) + " %, wait " + Num(100 * e.spread[2], 1) + " %)</td><td></td><td></td><td></td></tr>";
      for (const auto& [value, mean] : e.by_value) {
        h += "<tr><td>&nbsp;&nbsp;= " + Html(value) + "</td><td>" + Num(mean[0], 2) + "</td><td>" + Num(mean[1], 2) +
             "</td><td>" + Num(mean[2], 0) + "</td></tr>";
      }
    }
    h += "</table>\n";
  }
  h += "<h2>Cells</h2>\n<table id=\"t-cells\"><tr><th>cell</th><th>run</th><th>cost USD</th><th>GPU-h lost</th>"
       "<th>p95 wait s</th><th>completed</th><th>unfinished</th></tr>";
  for (const CellRow& r : rows) {
    h += "<tr><td>" + Html(r.inputs["cell"].get<std::string>()) + "</td><td>" + Html(r.inputs["run"].get<std::string>()) +
         "</td><td>" + Num(r.run["total_cost_usd"].get<double>(), 2) + "</td><td>" +
         Num(r.run["gpu_hours_lost"].get<double>(), 2) + "</td><td>" + Num(r.run["queue_wait_s"]["p95"].get<double>(), 0) +
         "</td><td>" + std::to_string(r.run["jobs_completed"].get<int64_t>()) + "</td><td>" +
         std::to_string(r.run["jobs_unfinished"].get<int64_t>()) + "</td></tr>";
  }
  return h + "</table>\n</body></html>\n";
}

struct MergeOptions {
  std::string dir;
  std::string format = "csv";
};

int MergeFail(const std::string& message, int code) {
  return FailCommand("gpuscaler sim merge", message, code);
}

int RunMerge(const MergeOptions& o) {
  const fs::path cells_dir = fs::path(o.dir) / "cells";
  if (!fs::is_directory(cells_dir))
    return MergeFail(o.dir + " has no cells/ directory (write one with sim sweep)", 2);
  std::vector<std::string> ids;
  for (const auto& entry : fs::directory_iterator(cells_dir)) ids.push_back(entry.path().filename().string());
  std::sort(ids.begin(), ids.end());
  std::vector<CellRow> rows;
  size_t unfinished = 0;
  for (const std::string& id : ids) {
    const fs::path file = cells_dir / id / "summary.json";
    std::ifstream in(file);
    if (!in) {
      ++unfinished;
      continue;
    }
    Json s = Json::parse(in, nullptr, false);
    if (s.is_discarded() || !s.contains("sim") || !s.contains("inputs"))
      return MergeFail(file.string() + ": not a cell summary", 2);
    const std::string run = s["inputs"]["run"];
    for (const Json& r : s["sim"]["results"]) {
      if (r["name"] == run) rows.push_back({s["inputs"], r});
    }
  }
  if (unfinished > 0) std::cerr << "gpuscaler sim merge: " << unfinished << " cell(s) have no result yet\n";
  if (rows.empty()) return MergeFail(o.dir + ": no finished cell", 1);
  const std::vector<Point> points = MeanPoints(rows);

  if (o.format == "html") {
    std::cout << MergeHtml(o.dir, rows, points, unfinished);
    return 0;
  }
  if (o.format == "json") {
    Json cells = Json::array(), front = Json::array();
    for (const CellRow& r : rows) cells.push_back({{"inputs", r.inputs}, {"result", r.run}});
    for (const Point& p : points) {
      if (p.on_front) front.push_back(PointJson(p));
    }
    std::cout << Json({{"cells", cells}, {"pareto_front", front}}).dump(1) << "\n";
    return 0;
  }
  std::cout << "cell,trace,market,policy,run,overrides,seed,total_cost_usd,gpu_hours_lost,queue_wait_p95_s,"
               "jobs_completed,jobs_unfinished,pareto\n";
  for (const CellRow& r : rows) {
    const bool on_front = std::any_of(points.begin(), points.end(),
                                      [&](const Point& p) { return p.on_front && SamePoint(p, r); });
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, "%.2f,%.2f,%.0f,%lld,%lld", r.run["total_cost_usd"].get<double>(),
                  r.run["gpu_hours_lost"].get<double>(), r.run["queue_wait_s"]["p95"].get<double>(),
                  static_cast<long long>(r.run["jobs_completed"].get<int64_t>()),
                  static_cast<long long>(r.run["jobs_unfinished"].get<int64_t>()));
    std::cout << CsvField(r.inputs["cell"].get<std::string>()) << "," << CsvField(r.inputs["trace"].get<std::string>()) << ","
              << CsvField(r.inputs["market"].get<std::string>()) << "," << CsvField(r.inputs["policy"].get<std::string>()) << ","
              << CsvField(r.inputs["run"].get<std::string>()) << "," << CsvField(r.inputs["overrides"].dump()) << ","
              << r.inputs["seed"].get<uint64_t>() << "," << numbers << "," << (on_front ? "yes" : "no") << "\n";
  }
  return 0;
}

}  // namespace

void RegisterMergeCommand(CLI::App& sim, int* exit_code) {
  auto mo = std::make_shared<MergeOptions>();
  CLI::App* merge = sim.add_subcommand(
      "merge", "A sweep's cells as a table, with the Pareto front of cost, GPU-hours lost and p95 wait per trace "
               "(csv, json, or a self-contained html page)");
  merge->add_option("dir", mo->dir, "The sweep's --out directory")->required();
  merge->add_option("--format", mo->format, "csv (default), json or html")
      ->check(CLI::IsMember({"csv", "json", "html"}));
  merge->callback([mo, exit_code] { *exit_code = RunMerge(*mo); });
}

}  // namespace gpuscaler::cli
