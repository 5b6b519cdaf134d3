#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuscaler/model/money.h"
#include "sim/oracle_share.h"

namespace gpuscaler::sim {
namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string Duration(double seconds) {
  if (seconds < 60) return Fmt("%.0fs", seconds);
  if (seconds < 3600) return Fmt("%.1fm", seconds / 60);
  return Fmt("%.1fh", seconds / 3600);
}

std::string Pad(const std::string& s, size_t width, bool left) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

using Rows = std::vector<std::pair<std::string, std::vector<std::string>>>;

// The header lines, then the rows under one column per run.
std::string RenderTable(const Scenario& scenario, const std::vector<RunResult>& results, const Rows& rows) {
  size_t label_w = 0;
  for (const auto& [label, cells] : rows) label_w = std::max(label_w, label.size());
  std::vector<size_t> w;
  for (size_t i = 0; i < results.size(); ++i) {
    size_t m = results[i].name.size();
    for (const auto& [label, cells] : rows) m = std::max(m, cells[i].size());
    w.push_back(m);
  }
  std::string out = "Scenario: " + scenario.name + " (" + scenario.description + ")\n";
  out += "Window: " + FormatRfc3339(scenario.start) + " + " + FormatDuration(scenario.horizon) + ", " +
         std::to_string(scenario.trace.jobs.size()) + " jobs\n";
  // A built-in source already reads "(built-in ...)": not parenthesised twice.
  const std::string& source = scenario.policy_source;
  const bool parenthesised = !source.empty() && source.front() == '(' && source.back() == ')';
  out += "Catalog: " + scenario.catalog_source + "   Policy: " + scenario.policy.name + " " +
         (parenthesised ? source : "(" + source + ")") + "\n\n";
  out += Pad("", label_w, true);
  for (size_t i = 0; i < results.size(); ++i) out += "  " + Pad(results[i].name, w[i], false);
  out += "\n";
  for (const auto& [label, cells] : rows) {
    out += Pad(label, label_w, true);
    for (size_t i = 0; i < cells.size(); ++i) out += "  " + Pad(cells[i], w[i], false);
    out += "\n";
  }
  return out;
}

std::string Usd(double usd) { return FormatUsd(usd, MoneyStyle::kBareCents); }

// The bound's figures, below the table.
std::string FormatBound(const BoundComparison& c) {
  const DeadlineBound& b = c.bound;
  std::string out = "\nDeadline bound (the most any schedule meeting every meetable deadline could save):\n";
  out += "  relaxed model: meetable " + std::to_string(b.meetable.jobs) + " jobs, " +
         Fmt("%.1f", b.meetable.gpu_hours) + " GPU-h, bound " + Usd(b.meetable.deferred_usd) + " (at once " +
         Usd(b.meetable.at_once_usd) + ", on-demand " + Usd(b.meetable.on_demand_usd) + "); unmeetable " +
         std::to_string(b.unmeetable.jobs) + " jobs, no deadline " + std::to_string(b.no_deadline.jobs) +
         " jobs (at once in both)\n";
  out += "  at once: " + c.at_once_run + " " + Usd(c.at_once_usd);
  if (c.labelled_at_once_usd) out += " (its labelled replay " + Usd(*c.labelled_at_once_usd) + ")";
  out += "\n";
  size_t name_w = 0;
  for (const BoundSplit& s : c.splits) name_w = std::max(name_w, s.name.size());
  for (size_t i = 0; i < c.splits.size(); ++i) {
    const BoundSplit& s = c.splits[i];
    out += "  split " + Pad(s.name + ":", name_w + 1, true) + " meetable share " + Usd(s.meetable_usd) +
           ", best deferred " + Usd(s.best_deferred_usd) + ", saving " + Usd(s.saving_usd) +
           Fmt(" (%.1f%%)", s.saving_pct) + (i == c.most_generous ? "  <- most generous" : "") + "\n";
  }
  const BoundSplit& best = c.Best();
  out += "  the bound: best deferred " + Usd(best.best_deferred_usd) + ", at once " + Usd(c.at_once_usd) +
         ", saving " + Usd(best.saving_usd) + Fmt(" (%.1f%% of at once)", best.saving_pct) + "\n";
  if (c.labelled_at_once_usd && std::abs(*c.labelled_at_once_usd - c.at_once_usd) >= 0.005) {
    out += "  warning: the labelled replay of " + c.at_once_run +
           " ran differently; the measured splits are of that replay\n";
  }
  return out;
}

nlohmann::ordered_json TotalsJson(const JobTotals& t) {
  return {{"jobs", t.jobs},
          {"gpu_hours", t.gpu_hours},
          {"deferred_usd", t.deferred_usd},
          {"deferred_spot_gpu_hours", t.deferred_spot_gpu_hours},
          {"at_once_usd", t.at_once_usd},
          {"at_once_spot_gpu_hours", t.at_once_spot_gpu_hours},
          {"on_demand_usd", t.on_demand_usd}};
}

nlohmann::ordered_json BoundJson(const BoundComparison& c) {
  using J = nlohmann::ordered_json;
  const BoundSplit& best = c.Best();
  J splits = J::array();
  for (const BoundSplit& s : c.splits) {
    splits.push_back(J{{"name", s.name},
                       {"description", s.description},
                       {"meetable_usd", s.meetable_usd},
                       {"best_deferred_usd", s.best_deferred_usd},
                       {"saving_usd", s.saving_usd},
                       {"saving_pct", s.saving_pct}});
  }
  return J{{"at_once_run", c.at_once_run},
           {"at_once_usd", c.at_once_usd},
           {"labelled_at_once_usd", c.labelled_at_once_usd ? J(*c.labelled_at_once_usd) : J(nullptr)},
           {"best_deferred_usd", best.best_deferred_usd},
           {"saving_usd", best.saving_usd},
           {"saving_pct", best.saving_pct},
           {"split", best.name},
           {"splits", std::move(splits)},
           {"horizon_s", c.bound.horizon.count()},
           {"notice_s", c.bound.notice.count()},
           {"meetable", TotalsJson(c.bound.meetable)},
           {"unmeetable", TotalsJson(c.bound.unmeetable)},
           {"no_deadline", TotalsJson(c.bound.no_deadline)},
           {"jobs_without_gpu", c.bound.jobs_without_gpu},
           {"jobs_after_horizon", c.bound.jobs_after_horizon}};
}

nlohmann::ordered_json OracleShareJson(const OracleShare& s) {
  using J = nlohmann::ordered_json;
  return J{{"share_pct", s.share_pct ? J(*s.share_pct) : J(nullptr)},
           {"p95_s", s.run_p95_s},
           {"reactive_p95_s", s.reactive_p95_s},
           {"oracle_p95_s", s.oracle_p95_s},
           {"cost_usd", s.run_cost_usd},
           {"oracle_cost_usd", s.oracle_cost_usd},
           {"cost_difference_usd", s.cost_difference_usd},
           {"cost_difference_pct", s.cost_difference_pct ? J(*s.cost_difference_pct) : J(nullptr)},
           {"equal_cost", s.equal_cost}};
}

}  // namespace

std::string FormatSummaryTable(const Scenario& scenario, const std::vector<RunResult>& results,
                               const BoundComparison* bound) {
  Rows rows;
  auto row = [&](const std::string& label, auto value) {
    std::vector<std::string> cells;
    for (const RunResult& r : results) cells.push_back(value(r));
    rows.emplace_back(label, std::move(cells));
  };
  row("total cost (USD)", [](const RunResult& r) { return FormatUsd(r.total_cost_usd, MoneyStyle::kBareCents); });
  row("  on-demand", [](const RunResult& r) {
    return FormatUsd(r.cost_by_capacity_type.at("on-demand"), MoneyStyle::kBareCents);
  });
  row("  spot", [](const RunResult& r) { return FormatUsd(r.cost_by_capacity_type.at("spot"), MoneyStyle::kBareCents); });
  const bool reserved =
      std::any_of(results.begin(), results.end(), [](const RunResult& r) { return !r.reservations.empty(); });
  if (reserved) {
    row("  reserved, used", [](const RunResult& r) {
      return FormatUsd(r.cost_by_capacity_type.at("reserved"), MoneyStyle::kBareCents);
    });
    row("  reserved, unused", [](const RunResult& r) {
      double unused = 0;
      for (const ReservationUse& u : r.reservations) unused += u.unused_usd;
      return FormatUsd(unused, MoneyStyle::kBareCents);
    });
    row("reserved in use while demand exceeds it", [](const RunResult& r) {
      if (r.reserved_slot_hours_when_demand_exceeds <= 0) return std::string("-");
      return Fmt("%.1f%%", 100 * r.reserved_used_hours_when_demand_exceeds / r.reserved_slot_hours_when_demand_exceeds);
    });
  }
  const bool blocks = std::any_of(results.begin(), results.end(), [](const RunResult& r) {
    return std::any_of(r.reservations.begin(), r.reservations.end(),
                       [](const ReservationUse& u) { return u.reservation.kind == ReservationKind::kCapacityBlock; });
  });
  if (blocks) {
    row("block nodes taken back by the cloud", [](const RunResult& r) {
      int n = 0;
      for (const ReservationUse& u : r.reservations) n += u.instances_taken_back;
      return std::to_string(n);
    });
    row("jobs lost to a block's end (runtime known)", [](const RunResult& r) {
      return std::to_string(r.jobs_taken_back) + " (" + std::to_string(r.jobs_taken_back_runtime_known) + ")";
    });
  }
  row("savings vs on-demand", [](const RunResult& r) {
    return r.savings_vs_on_demand_pct ? Fmt("%.1f%%", *r.savings_vs_on_demand_pct) : std::string("-");
  });
  if (bound != nullptr) {
    row("saving vs at once (" + bound->at_once_run + ")", [bound](const RunResult& r) {
      const double saving = bound->SavingUsd(r);
      return Usd(saving) + Fmt(" (%.1f%%)", bound->at_once_usd > 0 ? 100 * saving / bound->at_once_usd : 0.0);
    });
    row("  share of the most any schedule could save", [bound](const RunResult& r) {
      const std::optional<double> share = bound->ShareOfBoundPct(r);
      return share ? Fmt("%.1f%%", *share) : std::string("-");
    });
  }
  row("queue wait p50/p95/p99", [](const RunResult& r) {
    return Duration(r.queue_wait_s.p50) + "/" + Duration(r.queue_wait_s.p95) + "/" + Duration(r.queue_wait_s.p99);
  });
  std::set<std::string> classes;
  for (const RunResult& r : results) {
    for (const auto& [cls, p] : r.queue_wait_s_by_class) classes.insert(cls);
  }
  for (const std::string& cls : classes) {
    row("  " + cls, [&cls](const RunResult& r) {
      auto it = r.queue_wait_s_by_class.find(cls);
      if (it == r.queue_wait_s_by_class.end()) return std::string("-");
      return Duration(it->second.p50) + "/" + Duration(it->second.p95) + "/" + Duration(it->second.p99);
    });
  }
  row("GPU-hours lost to interruptions", [](const RunResult& r) { return Fmt("%.1f", r.gpu_hours_lost); });
  const bool gangs = std::any_of(results.begin(), results.end(), [](const RunResult& r) { return r.gang_starts > 0; });
  if (gangs) {
    row("gang starts", [](const RunResult& r) { return std::to_string(r.gang_starts); });
    row("gang wait p50/p95/p99", [](const RunResult& r) {
      return Duration(r.gang_wait_s.p50) + "/" + Duration(r.gang_wait_s.p95) + "/" + Duration(r.gang_wait_s.p99);
    });
    row("GPU-hours held by partial gangs", [](const RunResult& r) { return Fmt("%.1f", r.partial_gang_idle_gpu_hours); });
  }
  row("utilisation (busy/paid GPU-h)", [](const RunResult& r) { return Fmt("%.1f%%", 100 * r.utilization); });
  row("paid GPU-hours", [](const RunResult& r) { return Fmt("%.0f", r.paid_gpu_hours); });
  row("launches / terminations", [](const RunResult& r) {
    return std::to_string(r.launches) + " / " + std::to_string(r.terminations);
  });
  row("spot interruptions", [](const RunResult& r) { return std::to_string(r.interruptions); });
  if (std::any_of(results.begin(), results.end(), [](const RunResult& r) { return r.warm_wakes > 0 || r.warm_stopped_usd > 0; })) {
    row("warm nodes woken / stopped cost", [](const RunResult& r) {
      return std::to_string(r.warm_wakes) + " / " + Fmt("%.2f", r.warm_stopped_usd);
    });
  }
  row("hard-budget violations (ticks)", [](const RunResult& r) { return std::to_string(r.hard_budget_violations); });
  row("jobs completed / unfinished", [](const RunResult& r) {
    return std::to_string(r.jobs_completed) + " / " + std::to_string(r.jobs_unfinished);
  });
  row("  queued at the end, never ran", [](const RunResult& r) {
    int64_t n = 0;
    for (const auto& [why, count] : r.never_started) n += count;
    return std::to_string(n);
  });
  std::set<std::string> deadline_classes;
  for (const RunResult& r : results) {
    for (const auto& [cls, d] : r.deadlines_by_class) deadline_classes.insert(cls);
  }
  if (!deadline_classes.empty()) {
    const auto counts = [](const DeadlineCounts& d) {
      return std::to_string(d.met) + " / " + std::to_string(d.missed) + " / " + std::to_string(d.open) + " / " +
             std::to_string(d.unmeetable);
    };
    row("deadlines met / missed / open / unmeetable", [&counts](const RunResult& r) {
      DeadlineCounts all;
      for (const auto& [cls, d] : r.deadlines_by_class) {
        all.met += d.met;
        all.missed += d.missed;
        all.open += d.open;
        all.unmeetable += d.unmeetable;
      }
      return counts(all);
    });
    for (const std::string& cls : deadline_classes) {
      row("  " + cls, [&cls, &counts](const RunResult& r) {
        auto it = r.deadlines_by_class.find(cls);
        return it == r.deadlines_by_class.end() ? std::string("-") : counts(it->second);
      });
    }
  }

  std::string out = RenderTable(scenario, results, rows);
  // Why the jobs that never ran stayed queued, per run.
  for (const RunResult& r : results) {
    for (const auto& [why, count] : r.never_started)
      out += "never ran (" + r.name + "): " + std::to_string(count) + " x " + why + "\n";
  }
  for (const OracleShare& share : OracleShares(results)) out += DescribeOracleShare(share) + "\n";
  if (bound != nullptr) out += FormatBound(*bound);
  return out;
}

std::string FormatJson(const Scenario& scenario, const std::vector<RunResult>& results,
                       const BoundComparison* bound) {
  using J = nlohmann::ordered_json;
  J doc;
  doc["scenario"] = {{"name", scenario.name},
                     {"description", scenario.description},
                     {"start", FormatRfc3339(scenario.start)},
                     {"horizon_s", scenario.horizon.count()},
                     {"jobs", scenario.trace.jobs.size()},
                     {"seed", scenario.seed},
                     {"catalog", scenario.catalog_source},
                     {"policy", scenario.policy.name},
                     {"forecast", std::string(ToString(scenario.forecast))}};
  const std::vector<OracleShare> shares = OracleShares(results);
  J arr = J::array();
  auto pct = [](const Percentiles& p) { return J{{"p50", p.p50}, {"p95", p.p95}, {"p99", p.p99}}; };
  for (const RunResult& r : results) {
    J j;
    j["name"] = r.name;
    j["policy"] = r.policy_name;
    j["forecast"] = r.forecast ? J(std::string(ToString(*r.forecast))) : J(nullptr);
    j["total_cost_usd"] = r.total_cost_usd;
    j["cost_by_capacity_type"] = J{{"on-demand", r.cost_by_capacity_type.at("on-demand")},
                                   {"spot", r.cost_by_capacity_type.at("spot")}};
    if (!r.reservations.empty()) {
      j["cost_by_capacity_type"]["reserved"] = r.cost_by_capacity_type.at("reserved");
      J reservations = J::array();
      for (const ReservationUse& u : r.reservations) {
        reservations.push_back(J{{"id", u.reservation.id},
                                 {"instance_type", u.reservation.instance_type},
                                 {"zone", u.reservation.zone},
                                 {"kind", ToString(u.reservation.kind)},
                                 {"count", u.reservation.total_count},
                                 {"slot_hours", u.slot_hours},
                                 {"used_hours", u.used_hours},
                                 {"cost_usd", u.cost_usd},
                                 {"used_usd", u.used_usd},
                                 {"unused_usd", u.unused_usd},
                                 {"instances_taken_back", u.instances_taken_back}});
      }
      j["reservations"] = std::move(reservations);
      j["reserved_slot_hours_when_demand_exceeds"] = r.reserved_slot_hours_when_demand_exceeds;
      j["reserved_used_hours_when_demand_exceeds"] = r.reserved_used_hours_when_demand_exceeds;
      j["jobs_taken_back"] = r.jobs_taken_back;
      j["jobs_taken_back_runtime_known"] = r.jobs_taken_back_runtime_known;
    }
    j["savings_vs_on_demand_pct"] = r.savings_vs_on_demand_pct ? J(*r.savings_vs_on_demand_pct) : J(nullptr);
    if (bound != nullptr) {
      const double saving = bound->SavingUsd(r);
      const std::optional<double> share = bound->ShareOfBoundPct(r);
      j["saving_vs_at_once_usd"] = saving;
      j["saving_vs_at_once_pct"] = bound->at_once_usd > 0 ? 100 * saving / bound->at_once_usd : 0.0;
      j["share_of_bound_saving_pct"] = share ? J(*share) : J(nullptr);
    }
    j["queue_wait_s"] = pct(r.queue_wait_s);
    for (const OracleShare& share : shares) {
      if (share.run == r.name) j["oracle_p95_cut"] = OracleShareJson(share);
    }
    J by_class = J::object();
    for (const auto& [cls, p] : r.queue_wait_s_by_class) by_class[cls] = pct(p);
    j["queue_wait_s_by_class"] = std::move(by_class);
    j["gpu_hours_lost"] = r.gpu_hours_lost;
    j["gang_starts"] = r.gang_starts;
    j["gang_wait_s"] = pct(r.gang_wait_s);
    j["partial_gang_idle_gpu_hours"] = r.partial_gang_idle_gpu_hours;
    j["busy_gpu_hours"] = r.busy_gpu_hours;
    j["paid_gpu_hours"] = r.paid_gpu_hours;
    j["utilization"] = r.utilization;
    j["launches"] = r.launches;
    if (r.warm_wakes > 0 || r.warm_stopped_usd > 0) {
      j["warm_wakes"] = r.warm_wakes;
      j["warm_stopped_usd"] = r.warm_stopped_usd;
      if (r.warm_spot_wakes > 0 || r.warm_interrupted_stops > 0) {
        j["warm_spot_wakes"] = r.warm_spot_wakes;
        j["warm_interrupted_stops"] = r.warm_interrupted_stops;
      }
    }
    j["terminations"] = r.terminations;
    j["interruptions"] = r.interruptions;
    j["requeues"] = r.requeues;
    j["hard_budget_violations"] = r.hard_budget_violations;
    j["jobs_completed"] = r.jobs_completed;
    j["jobs_unfinished"] = r.jobs_unfinished;
    J never = J::object();
    for (const auto& [why, count] : r.never_started) never[why] = count;
    j["never_started"] = std::move(never);
    J deadlines = J::object();
    for (const auto& [cls, d] : r.deadlines_by_class) {
      deadlines[cls] = J{{"met", d.met}, {"missed", d.missed}, {"open", d.open}, {"unmeetable", d.unmeetable}};
    }
    j["deadlines_by_class"] = std::move(deadlines);
    j["ticks"] = r.ticks;
    j["planner_calls"] = r.planner_calls;
    arr.push_back(std::move(j));
  }
  doc["results"] = std::move(arr);
  if (bound != nullptr) doc["deadline_bound"] = BoundJson(*bound);
  return doc.dump(2) + "\n";
}

std::string FormatTimeseriesCsv(const std::vector<RunResult>& results) {
  std::string out = "run,time,nodes,spot_nodes,gpus,queued_jobs,running_jobs,usd_per_hour,planned\n";
  for (const RunResult& r : results) {
    for (const TimePoint& p : r.timeseries) {
      out += r.name + "," + FormatRfc3339(p.time) + "," + std::to_string(p.nodes) + "," +
             std::to_string(p.spot_nodes) + "," + std::to_string(p.gpus) + "," + std::to_string(p.queued_jobs) + "," +
             std::to_string(p.running_jobs) + "," + Fmt("%.4f", p.usd_per_hour) + "," + (p.planned ? "1" : "0") +
             "\n";
    }
  }
  return out;
}

}  // namespace gpuscaler::sim
