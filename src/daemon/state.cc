#include "state.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "gpuscaler/store/database_url.h"
#include "gpuscaler/model/find_by_name.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler::daemon {
namespace {

// Nearest-rank percentile of sorted, non-empty `v` (q in (0, 1]).
double Percentile(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

std::shared_ptr<const std::map<std::string, WallTime>> PendingSince(
    const std::shared_ptr<const std::map<std::string, WallTime>>& before, const Snapshot& snapshot, WallTime now) {
  auto since = std::make_shared<std::map<std::string, WallTime>>();
  for (const DemandUnit& u : snapshot.pending) {
    WallTime first = now;
    if (before) {
      if (auto it = before->find(u.id); it != before->end()) first = it->second;
    }
    since->emplace(u.id, first);
  }
  return since;
}

std::vector<PendingClassStats> PendingByClass(const Snapshot& snapshot,
                                              const std::map<std::string, WallTime>& since, WallTime now) {
  std::map<std::string, std::vector<double>> waits;
  std::map<std::string, PendingClassStats> stats;
  for (const DemandUnit& u : snapshot.pending) {
    PendingClassStats& c = stats[u.workload_class];
    c.workload_class = u.workload_class;
    ++c.units;
    c.gpus += GpuShare(u);
    const auto it = since.find(u.id);
    const WallTime first = it == since.end() ? now : it->second;
    waits[u.workload_class].push_back(std::max(0.0, std::chrono::duration<double>(now - first).count()));
  }
  std::vector<PendingClassStats> out;
  for (auto& [name, c] : stats) {
    std::vector<double>& w = waits[name];
    std::sort(w.begin(), w.end());
    c.wait_p50_s = Percentile(w, 0.50);
    c.wait_p90_s = Percentile(w, 0.90);
    c.wait_p99_s = Percentile(w, 0.99);
    c.wait_max_s = w.back();
    out.push_back(c);
  }
  return out;
}

void Publish(const Engine& engine, const EngineTick& tick, DaemonState* state) {
  const Controller& c = engine.controller();
  std::shared_ptr<const Snapshot> snapshot = c.SharedSnapshot();
  auto policy = std::make_shared<const Policy>(c.policy());
  SeriesPoint p;
  p.time = tick.time;
  static_cast<FleetCounts&>(p) = CountFleet(*snapshot);
  p.usd_per_hour = tick.cost_usd_per_hour;
  p.pending_units = static_cast<int>(snapshot->pending.size());
  p.queued_jobs = tick.queued_jobs;
  p.month_to_date_usd = snapshot->month_to_date_usd;
  p.global_allowance_usd_per_hour =
      HourlyAllowanceUsd(policy->budget.global, snapshot->month_to_date_usd, snapshot->hours_left_in_month);

  state->Update([&](PublishedState& s) {
    s.mode = engine.mode();
    s.speed = engine.speed();
    s.finished = tick.finished;
    ++s.ticks;
    s.last_tick_time = tick.time;
    s.snapshot = snapshot;
    s.policy = policy;
    if (tick.report.decision_id != 0 || tick.report.planned) {
      if (tick.report.decision_id != 0) s.last_decision_id = tick.report.decision_id;
      s.last_summary = tick.report.plan.summary;
      s.predicted_cost_usd_per_hour = tick.report.plan.cost_after_usd_per_hour;
      s.unplaced_by_reason.clear();
      for (const UnplacedUnit& u : tick.report.plan.unplaced)
        ++s.unplaced_by_reason[std::string(ToString(u.reason))];
    }
    s.cost_usd_per_hour = tick.cost_usd_per_hour;
    if (tick.reload.kind == PolicyReload::Kind::kReloaded) {
      ++s.policy_reloads;
      s.policy_errors.clear();
    } else if (tick.reload.kind == PolicyReload::Kind::kRejected) {
      ++s.policy_rejections;
      s.policy_errors = tick.reload.errors;
    }
    if (!tick.report.planned && s.predicted_cost_usd_per_hour == 0) s.predicted_cost_usd_per_hour = p.usd_per_hour;
    s.blocked_classes = tick.report.blocked_classes;
    s.price_age = tick.report.price_age;
    s.stale_prices = tick.report.stale_prices;
    s.signals = tick.signals;
    s.queue_depth = tick.queue_depth;
    s.queued_jobs = tick.queued_jobs;
    s.running_jobs = tick.running_jobs;
    s.last_errors.clear();
    for (const Error& e : tick.report.errors) s.last_errors.push_back(e.ToString());
    if (tick.report.errors.empty()) s.ready = true;
    s.series.push_back(p);
    while (s.series.size() > kMaxSeries) s.series.pop_front();
    s.pending_since = PendingSince(s.pending_since, *snapshot, tick.time);
    s.pending_by_class = PendingByClass(*snapshot, *s.pending_since, tick.time);
    if (tick.report.planned) s.waiting_gangs = WaitingGangs(*snapshot, tick.report.plan, *s.pending_since, tick.time);
    if (tick.report.decision_id != 0 && !tick.report.governor.notes.empty()) {
      s.held.push_back({tick.report.decision_id, tick.report.governor.notes});
      while (s.held.size() > kMaxHeldDecisions) s.held.pop_front();
    }
  });
}

std::string StatusJson(const PublishedState& s) {
  using nlohmann::json;
  json j;
  j["mode"] = s.mode;
  j["speed"] = s.speed;
  j["ready"] = s.ready;
  j["leader"] = s.leader;
  j["paused"] = s.paused;
  j["finished"] = s.finished;
  j["ticks"] = s.ticks;
  j["started_at"] = FormatRfc3339(s.started_at);
  j["time"] = s.last_tick_time ? json(FormatRfc3339(*s.last_tick_time)) : json(nullptr);
  j["db_file"] = RedactDatabaseUrl(s.db_file);
  j["cost_usd_per_hour"] = s.cost_usd_per_hour;
  j["predicted_cost_usd_per_hour"] = s.predicted_cost_usd_per_hour;
  j["last_decision"] = {{"id", s.last_decision_id}, {"summary", s.last_summary}};
  j["unplaced_by_reason"] = s.unplaced_by_reason;
  j["waiting_gangs"] = WaitingGangsJson(s.waiting_gangs);
  j["scale_down_blocked_classes"] = s.blocked_classes;
  j["queued_jobs"] = s.queued_jobs;
  j["running_jobs"] = s.running_jobs;
  j["queue_depth"] = s.queue_depth;
  j["errors"] = s.last_errors;
  json policy = json::object();
  if (s.policy) {
    policy["name"] = s.policy->name;
    policy["hash"] = s.policy->content_hash;
    policy["file"] = s.policy->source_file;
  }
  policy["reloads"] = s.policy_reloads;
  policy["rejections"] = s.policy_rejections;
  policy["last_errors"] = s.policy_errors;
  j["policy"] = policy;
  json nodes = json::array();
  int pending = 0;
  double month = 0;
  if (s.snapshot) {
    pending = static_cast<int>(s.snapshot->pending.size());
    month = s.snapshot->month_to_date_usd;
    for (const Node& n : s.snapshot->nodes) {
      nodes.push_back({{"id", n.instance_id.empty() ? n.id : n.instance_id},
                       {"pool", n.pool},
                       {"instance_type", n.offering.instance_type},
                       {"zone", n.offering.zone},
                       {"capacity_type", std::string(ToString(n.offering.capacity_type))},
                       {"usd_per_hour", n.offering.usd_per_hour},
                       {"state", std::string(ToString(n.state))},
                       {"gpus", GpusOf(*s.snapshot, n)},
                       {"running_units", n.running.size()},
                       {"launched", FormatRfc3339(n.launch_time)}});
    }
  }
  j["nodes"] = nodes;
  j["pending_units"] = pending;
  j["month_to_date_usd"] = month;
  json signals = json::array();
  for (const ClassSignal& c : s.signals) {
    signals.push_back({{"class", c.workload_class},
                       {"kind", c.kind == ClassSignal::Kind::kQueueDepth ? "queue_depth" : "gpu_utilization"},
                       {"source", c.reading.source},
                       {"state", std::string(signals::ToString(c.reading.state))},
                       {"value", c.reading.value ? json(*c.reading.value) : json(nullptr)},
                       {"error", c.reading.error}});
  }
  j["signals"] = signals;
  json series = json::array();
  for (const SeriesPoint& p : s.series) {
    series.push_back({{"t", FormatRfc3339(p.time)},
                      {"nodes", p.nodes},
                      {"spot_nodes", p.spot_nodes},
                      {"gpus", p.gpus},
                      {"usd_per_hour", p.usd_per_hour},
                      {"pending_units", p.pending_units},
                      {"queued_jobs", p.queued_jobs}});
  }
  j["series"] = series;
  return j.dump();
}

}  // namespace gpuscaler::daemon
