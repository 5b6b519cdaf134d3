// The dashboard's figures (dashboard_figures.h) and its inputs read from the
// audit database (dashboard.h).
#include "dashboard_figures.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "gpuscaler/model/money.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler::daemon {

using nlohmann::json;

std::vector<Attribution> Attribute(const Snapshot& snapshot, const Node& n, const Policy* policy) {
  std::vector<GpuHolding> holdings;
  holdings.reserve(n.running.size());
  for (const DemandUnit& u : n.running)
    holdings.push_back({u.workload_class, policy ? TeamOf(u, *policy) : u.team, GpuShare(u)});
  const int gpus = GpusOf(snapshot, n);
  const NodePriceSplit split = SplitNodePrice(n.offering.usd_per_hour, gpus, holdings);
  std::vector<Attribution> out;
  for (size_t i = 0; i < holdings.size(); ++i) {
    const GpuHolding& h = holdings[i];
    if (h.gpus > 0) out.push_back({std::string(h.workload_class), std::string(h.team), h.gpus, split.usd[i]});
  }
  if (split.idle_gpus > 0 || gpus <= 0) out.push_back({"", "", split.idle_gpus, split.idle_usd});
  return out;
}

FleetCounts CountFleet(const PublishedState& s) { return s.snapshot ? CountFleet(*s.snapshot) : FleetCounts{}; }

std::set<std::string> RunningInstances(const PublishedState& s) {
  std::set<std::string> out;
  if (!s.snapshot) return out;
  for (const Node& n : s.snapshot->nodes) {
    if (Billed(n)) out.insert(n.instance_id);
  }
  return out;
}

std::vector<BudgetRow> Budgets(const PublishedState& s) {
  std::vector<BudgetRow> rows;
  if (!s.snapshot || !s.policy) return rows;
  const Snapshot& snap = *s.snapshot;
  const BudgetPolicy& b = s.policy->budget;
  std::map<std::string, double> pool_rate, team_rate;
  double fleet_rate = 0;
  for (const Node& n : snap.nodes) {
    if (!Billed(n)) continue;
    fleet_rate += n.offering.usd_per_hour;
    pool_rate[n.pool] += n.offering.usd_per_hour;
    for (const Attribution& a : Attribute(snap, n, s.policy.get())) {
      if (!a.team.empty()) team_rate[a.team] += a.usd_per_hour;
    }
  }
  auto add = [&](std::string scope, std::string name, const BudgetCap& cap, double rate, double mtd) {
    BudgetRow r{std::move(scope), std::move(name), cap, rate, mtd, 0, 0, ""};
    r.projected_month_usd = mtd + rate * snap.hours_left_in_month;
    r.allowance_usd_per_hour = HourlyAllowanceUsd(cap, mtd, snap.hours_left_in_month);
    const char* kind = cap.hard ? "hard" : "soft";
    if (!cap.hourly_usd && !cap.monthly_usd) {
      r.status = "no cap";
    } else if (cap.hourly_usd && rate > *cap.hourly_usd) {
      r.status = std::string("over the ") + kind + " hourly cap";
    } else if (cap.monthly_usd && r.projected_month_usd > *cap.monthly_usd) {
      r.status = std::string("projected over the ") + kind + " monthly cap";
    } else {
      r.status = "within";
    }
    rows.push_back(std::move(r));
  };
  auto find = [](const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  add("global", "all pools", b.global, fleet_rate, snap.month_to_date_usd);
  for (const auto& [pool, cap] : b.per_pool)
    add("pool", pool, cap, find(pool_rate, pool), find(snap.month_to_date_usd_by_pool, pool));
  for (const auto& [team, cap] : b.per_team)
    add("team", team, cap, find(team_rate, team), find(snap.month_to_date_usd_by_team, team));
  return rows;
}

std::map<std::string, std::map<std::string, RollupSum>> Rollups(const PublishedState& s) {
  const Snapshot& snap = *s.snapshot;
  std::map<std::string, std::map<std::string, RollupSum>> by;  // dimension -> key -> sum
  for (const Node& n : snap.nodes) {
    if (!Billed(n)) continue;
    const std::string name = NodeName(n);
    const double gpus = GpusOf(snap, n);
    for (const auto& [dim, key] : std::vector<std::pair<std::string, std::string>>{
             {"pool", n.pool}, {"zone", n.offering.zone}, {"capacity type", std::string(ToString(n.offering.capacity_type))}}) {
      RollupSum& sum = by[dim][key];
      sum.nodes.insert(name);
      sum.gpus += gpus;
      sum.usd += n.offering.usd_per_hour;
    }
    for (const Attribution& a : Attribute(snap, n, s.policy.get())) {
      RollupSum& sum = by["class"][a.workload_class.empty() ? "(idle capacity)" : a.workload_class];
      sum.nodes.insert(name);
      sum.gpus += a.gpus;
      sum.usd += a.usd_per_hour;
    }
  }
  return by;
}

SpotMarket SpotMarketOf(const DashboardInputs& in) {
  const PublishedState& s = in.state;
  SpotMarket market;
  std::map<SpotMarket::Key, int>& running = market.running;
  for (const Node& n : s.snapshot->nodes) {
    if (n.offering.capacity_type == CapacityType::kSpot) ++running[{n.offering.instance_type, n.offering.zone}];
  }
  std::map<SpotMarket::Key, std::pair<int, WallTime>>& notices = market.notices;
  for (const DashboardInterruption& i : in.interruptions) {
    auto& [count, last] = notices[{i.instance_type, i.zone}];
    ++count;
    last = std::max(last, i.time);
  }
  std::vector<const Offering*>& spot = market.offerings;
  for (const Offering& o : s.snapshot->offerings) {
    if (o.capacity_type == CapacityType::kSpot) spot.push_back(&o);
  }
  auto rank = [&](const Offering* o) {
    const SpotMarket::Key key{o->instance_type, o->zone};
    const auto r = running.find(key);
    const auto n = notices.find(key);
    return std::make_tuple(r == running.end() ? 0 : -r->second, n == notices.end() ? 0 : -n->second.first,
                           o->available ? 1 : 0);
  };
  std::stable_sort(spot.begin(), spot.end(), [&](const Offering* a, const Offering* b) { return rank(a) < rank(b); });
  return market;
}

DashboardSeries SeriesOf(const PublishedState& s) {
  DashboardSeries out;
  for (const SeriesPoint& p : s.series) {
    out.times.push_back(p.time);
    out.on_demand_nodes.push_back(p.nodes - p.spot_nodes);
    out.spot_nodes.push_back(p.spot_nodes);
    out.usd_per_hour.push_back(p.usd_per_hour);
    out.allowance_usd_per_hour.push_back(std::isfinite(p.global_allowance_usd_per_hour)
                                             ? p.global_allowance_usd_per_hour
                                             : std::numeric_limits<double>::quiet_NaN());
    out.pending_units.push_back(p.pending_units);
    out.queued_jobs.push_back(p.queued_jobs < 0 ? std::numeric_limits<double>::quiet_NaN()
                                                : static_cast<double>(p.queued_jobs));
  }
  return out;
}

BurnDown BurnDownOf(const PublishedState& s, const BudgetRow& global) {
  BurnDown out;
  std::vector<WallTime>& times = out.times;
  std::vector<double>& actual = out.month_to_date_usd;
  std::vector<double>& projected = out.projected_usd;
  for (const SeriesPoint& p : s.series) {
    times.push_back(p.time);
    actual.push_back(p.month_to_date_usd);
    projected.push_back(std::numeric_limits<double>::quiet_NaN());
  }
  if (!times.empty() && s.snapshot && s.snapshot->hours_left_in_month > 0) {
    projected.back() = actual.back();
    times.push_back(times.back() + Seconds(static_cast<int64_t>(s.snapshot->hours_left_in_month * 3600)));
    actual.push_back(std::numeric_limits<double>::quiet_NaN());
    projected.push_back(global.projected_month_usd);
  }
  return out;
}

std::string DashboardJsonOf(const PublishedState& s, std::vector<std::pair<std::string, std::string>> sections_html) {
  json j;
  j["time"] = s.last_tick_time ? json(FormatRfc3339(*s.last_tick_time)) : json(nullptr);
  j["ticks"] = s.ticks;
  json sections = json::object();
  for (auto& [name, html] : sections_html) sections[name] = std::move(html);
  j["sections"] = std::move(sections);
  json budgets = json::array();
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  for (const BudgetRow& b : Budgets(s)) {
    budgets.push_back({{"scope", b.scope},
                       {"name", b.name},
                       {"hard", b.cap.hard},
                       {"hourly_cap_usd", opt(b.cap.hourly_usd)},
                       {"monthly_cap_usd", opt(b.cap.monthly_usd)},
                       {"usd_per_hour", b.usd_per_hour},
                       {"month_to_date_usd", b.month_to_date_usd},
                       {"projected_month_usd", b.projected_month_usd},
                       {"allowance_usd_per_hour", std::isfinite(b.allowance_usd_per_hour)
                                                      ? json(b.allowance_usd_per_hour)
                                                      : json(nullptr)},
                       {"status", b.status}});
  }
  j["budgets"] = std::move(budgets);
  json pending = json::array();
  for (const PendingClassStats& c : s.pending_by_class) {
    pending.push_back({{"class", c.workload_class},
                       {"units", c.units},
                       {"gpus", c.gpus},
                       {"wait_p50_s", c.wait_p50_s},
                       {"wait_p90_s", c.wait_p90_s},
                       {"wait_p99_s", c.wait_p99_s},
                       {"wait_max_s", c.wait_max_s}});
  }
  j["pending_by_class"] = std::move(pending);
  j["waiting_gangs"] = WaitingGangsJson(s.waiting_gangs);
  return j.dump();
}

DashboardInputs ReadDashboardInputs(PublishedState state) {
  DashboardInputs in;
  in.state = std::move(state);
  const PublishedState& s = in.state;
  if (s.db_file.empty() || s.last_decision_id == 0) return in;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(s.db_file);
  if (!reader) {
    in.store_error = reader.error().message();
    return in;
  }
  Result<std::vector<DecisionRow>> rows =
      (*reader)->DecisionsAfterId(std::max<int64_t>(0, s.last_decision_id - kDecisionsScanned), kDecisionsScanned);
  if (!rows) {
    in.store_error = rows.error().message();
    return in;
  }
  std::map<int64_t, std::vector<std::string>> held;
  for (const HeldActions& h : s.held) held[h.decision_id] = h.notes;
  // The newest decisions that did or held back something, or left work
  // unplaced; the quiet ones in between are only counted.
  for (auto it = rows->rbegin(); it != rows->rend() && in.decisions.size() < kDashboardDecisions; ++it) {
    DashboardDecision d;
    d.row = std::move(*it);
    if (auto h = held.find(d.row.id); h != held.end()) d.held = h->second;
    const json plan = json::parse(d.row.decision.plan_json, nullptr, false);
    const bool acted = plan.is_object() && ((plan.contains("launches") && !plan["launches"].empty()) ||
                                            (plan.contains("terminations") && !plan["terminations"].empty()) ||
                                            (plan.contains("unplaced") && !plan["unplaced"].empty()));
    if (!acted && d.held.empty() && !d.row.decision.scale_down_blocked) {
      ++in.quiet_decisions;
      continue;
    }
    in.decisions.push_back(std::move(d));
  }
  const WallTime now = s.last_tick_time.value_or(s.started_at);
  WallTime from = now - kNoticeWindow;
  if (!in.decisions.empty()) from = std::min(from, in.decisions.back().row.decision.time);
  Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(from, now + Seconds(1));
  if (!nodes) {
    in.store_error = nodes.error().message();
    return in;
  }
  std::map<int64_t, DashboardDecision*> by_id;
  for (DashboardDecision& d : in.decisions) by_id[d.row.id] = &d;
  for (const NodeRow& n : *nodes) {
    in.launched_by[n.launch.instance_id] = n.launch.decision_id;
    if (auto it = by_id.find(n.launch.decision_id); it != by_id.end()) {
      it->second->launched.emplace_back(n.launch.instance_id, n.end_time ? n.cause : std::string());
    }
    if (n.end_time && n.cause == "interrupted" && *n.end_time >= now - kNoticeWindow) {
      in.interruptions.push_back(
          {n.launch.instance_id, n.launch.offering.instance_type, n.launch.offering.zone, *n.end_time});
    }
  }
  std::sort(in.interruptions.begin(), in.interruptions.end(),
            [](const DashboardInterruption& a, const DashboardInterruption& b) { return a.time > b.time; });
  return in;
}

}  // namespace gpuscaler::daemon
