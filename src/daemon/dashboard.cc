// The dashboard page served at "/", rendered on the server as one
// self-contained document: inline CSS, inline SVG charts and a small inline
// script, no fonts, scripts or images from anywhere else (it must work in an
// air-gapped cluster and behind `kubectl port-forward`). Links are relative,
// so the page also works behind a path prefix. The script polls
// api/v1/dashboard and swaps in the sections it carries; without script the
// page is complete as served.
#include "dashboard.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "dashboard_figures.h"
#include "gpuscaler/model/escape.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/model/money.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/schedule.h"

namespace gpuscaler::daemon {
namespace {

using nlohmann::json;

std::string Esc(std::string_view s) { return HtmlEscape(s); }

std::string Usd(double v) { return FormatUsd(v, MoneyStyle::kCents); }

std::string Fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "42 s", "7.5 min", "3.2 h".
std::string Duration(double seconds) {
  if (seconds < 90) return Fixed(seconds, 0) + " s";
  if (seconds < 90 * 60) return Fixed(seconds / 60, 1) + " min";
  return Fixed(seconds / 3600, 1) + " h";
}

std::string TimeText(WallTime t) {
  std::string s = FormatRfc3339(t);
  if (s.size() >= 20) s = s.substr(0, 10) + " " + s.substr(11, 8) + " UTC";
  return s;
}

// The fragment a node's row carries (ids may hold characters an id attribute
// should not).
std::string NodeAnchor(std::string_view instance_id) {
  std::string out = "node-";
  for (char c : instance_id) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

// ---- budgets ---------------------------------------------------------------

std::string CapText(const std::optional<double>& v, const char* unit) {
  return v ? Usd(*v) + unit : "–";
}

std::string BudgetsSection(const PublishedState& s) {
  const std::vector<BudgetRow> rows = Budgets(s);
  std::string out = "<h2>Budgets</h2>";
  if (rows.empty()) return out + "<p>waiting for the first tick</p>";
  const BudgetRow& g = rows.front();
  // The headline: spend rate against the global hourly cap (or "no cap").
  out += "<p id=\"budget-line\" class=\"budget-line " +
         std::string(g.status == "within" || g.status == "no cap" ? "ok" : "bad") + "\" data-usd-per-hour=\"" +
         Fixed(g.usd_per_hour, 2) + "\"" +
         (g.cap.hourly_usd ? " data-hourly-cap=\"" + Fixed(*g.cap.hourly_usd, 2) + "\"" : std::string()) + ">";
  out += "spending <b>" + Usd(g.usd_per_hour) + "/h</b>";
  if (g.cap.hourly_usd) {
    out += " of the " + std::string(g.cap.hard ? "hard" : "soft") + " cap <b>" + Usd(*g.cap.hourly_usd) + "/h</b> (" +
           Fixed(100 * g.usd_per_hour / std::max(*g.cap.hourly_usd, 1e-9), 1) + " %)";
  } else {
    out += ", no global hourly cap";
  }
  out += "; month to date <b>" + Usd(g.month_to_date_usd) + "</b>, projected month end <b>" +
         Usd(g.projected_month_usd) + "</b>";
  if (g.cap.monthly_usd) out += " of " + Usd(*g.cap.monthly_usd);
  out += "</p>";
  out += "<div class=\"scroll\"><table id=\"budgets\"><thead><tr><th>budget</th><th>spend rate</th><th>hourly cap</th>"
         "<th>month to date</th><th>monthly cap</th><th>projected month end</th><th>allowed now</th><th>status</th>"
         "</tr></thead><tbody>";
  for (const BudgetRow& r : rows) {
    out += "<tr class=\"budget\" data-scope=\"" + r.scope + "\" data-name=\"" + Esc(r.name) + "\"><td>" + r.scope +
           " <b>" + Esc(r.name) + "</b>" + (r.cap.hourly_usd || r.cap.monthly_usd ? (r.cap.hard ? " (hard)" : " (soft)") : "") +
           "</td><td>" + Usd(r.usd_per_hour) + "/h</td><td>" + CapText(r.cap.hourly_usd, "/h") + "</td><td>" +
           Usd(r.month_to_date_usd) + "</td><td>" + CapText(r.cap.monthly_usd, "") + "</td><td>" +
           Usd(r.projected_month_usd) + "</td><td>" +
           (std::isfinite(r.allowance_usd_per_hour) ? Usd(r.allowance_usd_per_hour) + "/h" : "unlimited") +
           "</td><td class=\"" + (r.status == "within" || r.status == "no cap" ? "ok" : "bad") + "\">" + r.status +
           "</td></tr>";
  }
  out += "</tbody></table></div>";

  return out;
}

// ---- rollups, pending, market ----------------------------------------------

// Each pool's node limits at the last tick, after the scaling schedules in
// force then (policy/schedule.h).
std::string PoolLimitsTable(const PublishedState& s) {
  if (!s.policy || !s.last_tick_time || s.policy->pools.empty()) return "";
  const std::vector<ScheduleInForce> in_force = SchedulesInForce(s.policy->scaling.schedules, *s.last_tick_time);
  std::string out = "<div class=\"scroll\"><table id=\"pool-limits\"><thead><tr><th>pool</th><th>min nodes</th>"
                    "<th>max nodes</th><th>set by</th></tr></thead><tbody>";
  for (const NodePoolPolicy& pool : s.policy->pools) {
    const PoolLimits limits = PoolLimitsAt(pool, in_force);
    std::string by = "the pool";
    if (!limits.schedules.empty()) {
      by = "schedule";
      for (size_t i = 0; i < limits.schedules.size(); ++i) {
        const std::string& name = limits.schedules[i];
        auto f = std::find_if(in_force.begin(), in_force.end(), [&](const ScheduleInForce& x) { return x.schedule->name == name; });
        by += std::string(i == 0 ? " " : ", ") + Esc(name) +
              (f != in_force.end() ? " (until " + TimeText(f->until) + ")" : std::string());
      }
    }
    out += "<tr><td>" + Esc(pool.name) + "</td><td>" + std::to_string(limits.min_nodes) + "</td><td>" +
           std::to_string(limits.max_nodes) + "</td><td>" + by + "</td></tr>";
  }
  return out + "</tbody></table></div>";
}

std::string RollupsSection(const PublishedState& s) {
  std::string out = "<h2>Rollups</h2>";
  if (!s.snapshot) return out + "<p>waiting for the first tick</p>";
  std::map<std::string, std::map<std::string, RollupSum>> by = Rollups(s);  // dimension -> key -> sum
  out += "<div class=\"rollups\">";
  for (const char* dim : {"pool", "zone", "capacity type", "class"}) {
    out += "<div class=\"scroll\"><table class=\"rollup\" data-dimension=\"" + std::string(dim) + "\"><thead><tr><th>" +
           dim + "</th><th>nodes</th><th>GPUs</th><th>USD/h</th></tr></thead><tbody>";
    for (const auto& [key, sum] : by[dim]) {
      out += "<tr><td>" + Esc(key) + "</td><td>" + std::to_string(sum.nodes.size()) + "</td><td>" + Fixed(sum.gpus, 1) +
             "</td><td>" + Usd(sum.usd) + "</td></tr>";
    }
    if (by[dim].empty()) out += "<tr><td colspan=\"4\">no nodes</td></tr>";
    out += "</tbody></table></div>";
  }
  out += "</div><p class=\"note\">A class's nodes run some of its work; its GPUs and USD/h are its share of them "
         "(the node's price split by GPUs); the rest is idle capacity.</p>";
  return out + PoolLimitsTable(s);
}

std::string PendingSection(const PublishedState& s) {
  std::string out = "<h2>Pending demand</h2><div class=\"scroll\"><table id=\"pending\"><thead><tr><th>class</th>"
                    "<th>units</th><th>GPUs</th><th>wait p50</th><th>p90</th><th>p99</th><th>max</th></tr></thead><tbody>";
  for (const PendingClassStats& c : s.pending_by_class) {
    out += "<tr data-class=\"" + Esc(c.workload_class) + "\"><td>" + Esc(c.workload_class) + "</td><td>" +
           std::to_string(c.units) + "</td><td>" + Fixed(c.gpus, 1) + "</td><td>" + Duration(c.wait_p50_s) + "</td><td>" +
           Duration(c.wait_p90_s) + "</td><td>" + Duration(c.wait_p99_s) + "</td><td>" + Duration(c.wait_max_s) +
           "</td></tr>";
  }
  if (s.pending_by_class.empty()) out += "<tr><td colspan=\"7\">nothing pending</td></tr>";
  out += "</tbody></table></div><p class=\"note\">Waits count from the tick that first saw each unit pending.</p>";
  if (!s.waiting_gangs.empty()) {
    out += "<h3>Waiting gangs</h3><div class=\"scroll\"><table id=\"gangs\"><thead><tr><th>gang</th><th>class</th>"
           "<th>pending</th><th>running</th><th>of</th><th>waiting</th><th>waits for</th></tr></thead><tbody>";
    for (const WaitingGang& g : s.waiting_gangs) {
      out += "<tr data-gang=\"" + Esc(g.name) + "\"><td>" + Esc(g.name) + "</td><td>" + Esc(g.workload_class) +
             "</td><td>" + std::to_string(g.pending) + "</td><td>" + std::to_string(g.running) + "</td><td>" +
             std::to_string(g.size) + "</td><td>" + Duration(g.wait_s) + "</td><td>" + Esc(g.waits_for) + "</td></tr>";
    }
    out += "</tbody></table></div><p class=\"note\">A gang starts when every member has a node, all in one zone; "
           "until then none of its nodes is launched.</p>";
  }
  if (!s.unplaced_by_reason.empty()) {
    out += "<p>Unplaced at the last decision: ";
    bool first = true;
    for (const auto& [reason, count] : s.unplaced_by_reason) {
      out += (first ? "" : ", ") + std::to_string(count) + " " + Esc(reason);
      first = false;
    }
    out += "</p>";
  }
  return out;
}

std::string MarketSection(const DashboardInputs& in) {
  const PublishedState& s = in.state;
  std::string out = "<h2>Spot market (as the controller sees it)</h2>";
  if (!s.snapshot) return out + "<p>waiting for the first tick</p>";
  SpotMarket market = SpotMarketOf(in);
  std::map<SpotMarket::Key, int>& running = market.running;
  const std::map<SpotMarket::Key, std::pair<int, WallTime>>& notices = market.notices;
  out += "<div class=\"scroll tall\"><table id=\"market\"><thead><tr><th>type</th><th>zone</th><th>spot USD/h</th>"
         "<th>on-demand</th><th>discount</th><th>interruptions /node-h (learned)</th><th>availability</th>"
         "<th>nodes</th><th>notices 24 h</th></tr></thead><tbody>";
  int unavailable = 0;
  for (const Offering* offering : market.offerings) {
    const Offering& o = *offering;
    const std::pair<std::string, std::string> key{o.instance_type, o.zone};
    const auto n = notices.find(key);
    if (!o.available) ++unavailable;
    const double discount = o.on_demand_usd_per_hour > 0 ? 1 - o.usd_per_hour / o.on_demand_usd_per_hour : 0;
    out += "<tr class=\"offering" + std::string(o.available ? "" : " unavailable") + "\" data-offering=\"" +
           Esc(o.instance_type + "/" + o.zone) + "\"><td>" + Esc(o.instance_type) + "</td><td>" + Esc(o.zone) +
           "</td><td>" + Usd(o.usd_per_hour) + "</td><td>" + Usd(o.on_demand_usd_per_hour) + "</td><td>" +
           Fixed(100 * discount, 0) + " %</td><td>" + Fixed(o.interruptions_per_hour, 4) + "</td><td class=\"" +
           (o.available ? "ok\">available" : "bad\">capacity error: unavailable") + "</td><td>" +
           std::to_string(running.count(key) ? running[key] : 0) + "</td><td>" +
           (n == notices.end() ? "0" : std::to_string(n->second.first) + " (last " + TimeText(n->second.second) + ")") +
           "</td></tr>";
  }
  out += "</tbody></table></div><p class=\"note\">" + std::to_string(unavailable) +
         " spot offering(s) marked unavailable after capacity errors.</p>";
  out += "<h3>Recent interruptions (24 h)</h3><ul id=\"notices\">";
  size_t shown = 0;
  for (const DashboardInterruption& i : in.interruptions) {
    if (++shown > 20) break;
    out += "<li>" + TimeText(i.time) + " <span class=\"mono\">" + Esc(i.instance_id) + "</span> " +
           Esc(i.instance_type) + " " + Esc(i.zone) + "</li>";
  }
  if (in.interruptions.empty()) out += "<li>none</li>";
  if (in.interruptions.size() > 20) out += "<li>and " + std::to_string(in.interruptions.size() - 20) + " more</li>";
  out += "</ul>";
  return out;
}

// ---- plans and decisions ---------------------------------------------------

std::string OfferingKey(const json& o) {
  return o.value("instance_type", "") + "/" + o.value("zone", "") + "/" + o.value("capacity_type", "");
}

// The actions and unplaced work of a plan (its JSON, model/json.h).
// `prefix` makes links relative to the page ("" on "/", "../" below it);
// `running`: instances with a row on the dashboard now.
std::string PlanHtml(const json& plan, const std::string& prefix, const std::set<std::string>& running) {
  std::string out;
  if (!plan.is_object()) return "<p class=\"bad\">the stored plan is not readable JSON</p>";
  const json& launches = plan.contains("launches") ? plan["launches"] : json::array();
  const json& terms = plan.contains("terminations") ? plan["terminations"] : json::array();
  const json& unplaced = plan.contains("unplaced") ? plan["unplaced"] : json::array();
  if (!launches.empty()) {
    out += "<table class=\"launches\"><thead><tr><th>launch</th><th>pool</th><th>USD/h</th><th>reason</th></tr></thead><tbody>";
    for (const json& l : launches) {
      const json& o = l.contains("offering") ? l["offering"] : json::object();
      out += "<tr class=\"launch\" data-offering=\"" + Esc(OfferingKey(o)) + "\" data-count=\"" +
             std::to_string(l.value("count", 0)) + "\"><td>" + std::to_string(l.value("count", 0)) + " × " +
             Esc(o.value("instance_type", "")) + " " + Esc(o.value("zone", "")) + " " +
             Esc(o.value("capacity_type", "")) + "</td><td>" + Esc(l.value("pool", "")) + "</td><td>" +
             Usd(l.value("usd_per_hour", 0.0)) + "</td><td>" + Esc(l.value("reason", "")) + "</td></tr>";
    }
    out += "</tbody></table>";
  }
  if (!terms.empty()) {
    out += "<table class=\"terminations\"><thead><tr><th>remove</th><th>kind</th><th>saves</th><th>reason</th></tr></thead><tbody>";
    for (const json& t : terms) {
      std::string id = t.value("instance_id", "");
      if (id.empty()) id = t.value("node_id", "");
      const std::string cell = running.count(id) ? "<a href=\"" + prefix + "#" + NodeAnchor(id) + "\">" + Esc(id) + "</a>"
                                                 : Esc(id);
      out += "<tr class=\"termination\"><td class=\"mono\">" + cell + "</td><td>" + Esc(t.value("kind", "")) +
             "</td><td>" + Usd(t.value("saves_usd_per_hour", 0.0)) + "/h</td><td>" + Esc(t.value("reason", "")) +
             "</td></tr>";
    }
    out += "</tbody></table>";
  }
  if (!unplaced.empty()) {
    out += "<table class=\"unplaced\"><thead><tr><th>unplaced</th><th>class</th><th>why</th></tr></thead><tbody>";
    for (const json& u : unplaced) {
      const size_t count = u.contains("unit_ids") ? u["unit_ids"].size() : 0;
      const std::string detail = u.value("detail", "");
      out += "<tr class=\"unplaced-group\"><td>" + std::to_string(count) + " unit(s)</td><td>" +
             Esc(u.value("workload_class", "")) + "</td><td>" + Esc(u.value("reason", "")) +
             (detail.empty() ? "" : ": " + Esc(detail)) + "</td></tr>";
    }
    out += "</tbody></table>";
  }
  if (launches.empty() && terms.empty() && unplaced.empty()) out += "<p class=\"note\">no actions, nothing unplaced</p>";
  return out;
}

std::string LaunchedHtml(const std::vector<std::pair<std::string, std::string>>& launched, const std::string& prefix,
                         const std::set<std::string>& running) {
  if (launched.empty()) return "";
  std::string out = "<p class=\"launched\">launched: ";
  bool first = true;
  for (const auto& [id, cause] : launched) {
    out += first ? "" : ", ";
    first = false;
    if (running.count(id)) {
      out += "<a class=\"node-link mono\" href=\"" + prefix + "#" + NodeAnchor(id) + "\">" + Esc(id) + "</a>";
    } else {
      out += "<span class=\"mono\">" + Esc(id) + "</span> (" + Esc(cause.empty() ? "gone" : cause) + ")";
    }
  }
  return out + "</p>";
}

std::string DecisionsSection(const DashboardInputs& in) {
  std::string out = "<h2>Recent decisions that acted</h2>";
  if (!in.store_error.empty()) out += "<p class=\"bad\">audit database: " + Esc(in.store_error) + "</p>";
  if (in.quiet_decisions > 0) {
    out += "<p class=\"note\">Newest first; " + std::to_string(in.quiet_decisions) +
           " decision(s) in between changed nothing (all in <a href=\"api/v1/decisions\">the decisions API</a>).</p>";
  }
  if (in.decisions.empty()) return out + "<p>no decision that acted yet</p>";
  const std::set<std::string> running = RunningInstances(in.state);
  for (const DashboardDecision& d : in.decisions) {
    const DecisionRecord& r = d.row.decision;
    const std::string id = std::to_string(d.row.id);
    out += "<article class=\"decision\" id=\"decision-" + id + "\" data-decision=\"" + id + "\"><header>" +
           "<a class=\"explain\" href=\"decisions/" + id + "\">#" + id + " explain</a> <span>" + TimeText(r.time) +
           "</span> <span>" + Usd(r.cost_before_usd_per_hour) + "/h → " + Usd(r.cost_after_usd_per_hour) +
           "/h</span>" + (r.scale_down_blocked ? " <span class=\"bad\">scale-down held: stale signals</span>" : "") +
           "</header><div class=\"mono summary\">" + Esc(r.summary) + "</div>";
    out += PlanHtml(json::parse(r.plan_json, nullptr, false), "", running);
    if (!d.held.empty()) {
      out += "<ul class=\"held\">";
      for (const std::string& h : d.held) out += "<li>held: " + Esc(h) + "</li>";
      out += "</ul>";
    }
    out += LaunchedHtml(d.launched, "", running) + "</article>";
  }
  return out;
}

std::string FleetSection(const DashboardInputs& in) {
  const PublishedState& s = in.state;
  std::string out = "<h2>Fleet</h2><div class=\"scroll\"><table id=\"fleet\"><thead><tr><th>node</th><th>pool</th>"
                    "<th>type</th><th>zone</th><th>capacity</th><th>GPUs</th><th>USD/h</th><th>state</th><th>units</th>"
                    "<th>launched</th><th>by decision</th></tr></thead><tbody>";
  if (s.snapshot) {
    for (const Node& n : s.snapshot->nodes) {
      const std::string name = NodeName(n);
      std::string by;
      const auto it = in.launched_by.find(n.instance_id);
      if (!Billed(n)) {
        by = "on its way";
      } else if (it == in.launched_by.end()) {
        by = "–";
      } else if (it->second == 0) {
        by = "found running";
      } else {
        by = "<a class=\"decision-link\" href=\"decisions/" + std::to_string(it->second) + "\">#" +
             std::to_string(it->second) + "</a>";
      }
      const bool spot = n.offering.capacity_type == CapacityType::kSpot;
      out += "<tr id=\"" + NodeAnchor(name) + "\" class=\"node\"><td class=\"mono\">" + Esc(name) + "</td><td>" +
             Esc(n.pool) + "</td><td>" + Esc(n.offering.instance_type) + "</td><td>" + Esc(n.offering.zone) +
             "</td><td class=\"" + (spot ? "spot" : "od") + "\">" + std::string(ToString(n.offering.capacity_type)) +
             "</td><td>" + std::to_string(GpusOf(*s.snapshot, n)) + "</td><td>" + Usd(n.offering.usd_per_hour) +
             "</td><td>" + std::string(ToString(n.state)) + "</td><td>" + std::to_string(n.running.size()) +
             "</td><td>" + TimeText(n.launch_time) + "</td><td>" + by + "</td></tr>";
    }
  }
  return out + "</tbody></table></div>";
}

std::string KpisSection(const PublishedState& s) {
  const FleetCounts counts = CountFleet(s);
  const int nodes = counts.nodes, spot = counts.spot_nodes, gpus = counts.gpus;
  const double month = s.snapshot ? s.snapshot->month_to_date_usd : 0;
  const int pending = s.snapshot ? static_cast<int>(s.snapshot->pending.size()) : 0;
  const std::vector<std::pair<std::string, std::string>> kpis = {
      {"nodes", std::to_string(nodes) + " (" + std::to_string(spot) + " spot)"},
      {"GPUs", std::to_string(gpus)},
      {"spend rate", Usd(s.cost_usd_per_hour) + "/h"},
      {"planned rate", Usd(s.predicted_cost_usd_per_hour) + "/h"},
      {"month to date", Usd(month)},
      {"pending units", std::to_string(pending)},
      {"queued jobs", s.queued_jobs < 0 ? "–" : std::to_string(s.queued_jobs)},
      {"ticks", std::to_string(s.ticks)}};
  std::string out = "<div class=\"kpis\">";
  for (const auto& [label, value] : kpis) out += "<div class=\"kpi\"><b>" + Esc(value) + "</b><small>" + label + "</small></div>";
  out += "</div>";
  if (!s.blocked_classes.empty()) {
    out += "<p class=\"bad\">scale-down blocked (stale or missing signals): ";
    for (size_t i = 0; i < s.blocked_classes.size(); ++i) out += (i ? ", " : "") + Esc(s.blocked_classes[i]);
    out += "</p>";
  }
  for (const std::string& e : s.last_errors) out += "<p class=\"bad\">" + Esc(e) + "</p>";
  return out;
}

std::string StatusLine(const PublishedState& s) {
  std::string out = "<span>" + Esc(s.mode) + (s.mode == "demo" ? " (" + Fixed(s.speed, 0) + "×)" : "") +
                    (s.paused ? " — PAUSED" : "") + (s.finished ? " — demo finished" : "") + "</span>";
  out += "<span id=\"clock\" data-time=\"" + (s.last_tick_time ? FormatRfc3339(*s.last_tick_time) : std::string()) +
         "\">" + (s.last_tick_time ? "at " + TimeText(*s.last_tick_time) : "waiting for the first tick") + "</span>";
  if (s.policy) {
    out += "<span>policy " + Esc(s.policy->name) + " " + Esc(s.policy->content_hash.substr(0, 8)) +
           (s.policy_errors.empty() ? "" : " (last reload rejected)") + "</span>";
  }
  out += s.ready ? "<span class=\"ok\">ready</span>" : "<span class=\"bad\">not ready</span>";
  return out;
}

// Whether plans act on live spot prices, and how old they are.
std::string PricesLine(const PublishedState& s) {
  if (!s.last_tick_time) return "";
  const std::string age = std::to_string(s.price_age.count()) + " s";
  if (s.stale_prices.empty()) return "<p class=\"ok\">spot prices: live, read " + age + " ago</p>";
  return "<p class=\"bad\">" + Esc(s.stale_prices) + " (source last answered " + age +
         " ago): no replacements</p>";
}

std::string SignalsSection(const PublishedState& s) {
  std::string out = "<h2>Signals</h2>" + PricesLine(s);
  if (s.signals.empty()) {
    return out + "<p class=\"note\">" + (s.mode == "demo" ? "demo load: the simulator's job queue" : "no signals configured") +
           "</p>";
  }
  out += "<table>";
  for (const ClassSignal& c : s.signals) {
    out += "<tr><td>" + Esc(c.workload_class) + "</td><td>" +
           (c.kind == ClassSignal::Kind::kQueueDepth ? "queue depth" : "GPU utilization") + "</td><td class=\"" +
           (c.reading.state == signals::SignalState::kOk ? "ok" : "bad") + "\">" +
           std::string(signals::ToString(c.reading.state)) + "</td><td>" +
           (c.reading.value ? Fixed(*c.reading.value, 2) : "–") + "</td></tr>";
  }
  return out + "</table>";
}

// Sections in page order: name -> its inner HTML.
std::vector<std::pair<std::string, std::string>> Sections(const DashboardInputs& in) {
  const PublishedState& s = in.state;
  std::map<std::string, std::string> charts;
  AddChartSections(s, &charts);
  return {{"status", StatusLine(s)},
          {"kpis", KpisSection(s)},
          {"budgets", BudgetsSection(s)},
          {"chart-cost", charts["chart-cost"]},
          {"chart-burndown", charts["chart-burndown"]},
          {"chart-nodes", charts["chart-nodes"]},
          {"chart-queue", charts["chart-queue"]},
          {"rollups", RollupsSection(s)},
          {"pending", PendingSection(s)},
          {"signals", SignalsSection(s)},
          {"market", MarketSection(in)},
          {"decisions", DecisionsSection(in)},
          {"fleet", FleetSection(in)}};
}

constexpr const char* kStyle = R"CSS(
 body{font:14px system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
 header.top{background:#1d2430;color:#fff;padding:10px 20px}
 header.top h1{font-size:18px;margin:0 12px 0 0;display:inline}
 #sec-status{display:inline-flex;gap:16px;flex-wrap:wrap} #sec-status span{opacity:.9}
 nav{margin-top:6px;display:flex;gap:12px;flex-wrap:wrap} nav a{color:#9cc3ff}
 main{padding:16px 20px;display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:16px}
 section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:12px 16px;min-width:0}
 section.wide{grid-column:1/-1}
 h2{font-size:15px;margin:0 0 8px} h3{font-size:13px;margin:12px 0 6px}
 .kpis{display:flex;gap:20px;flex-wrap:wrap} .kpi b{display:block;font-size:22px} .kpi small,.note{color:#5b6575}
 .budget-line{font-size:15px;margin:4px 0 10px}
 table{border-collapse:collapse;width:100%;font-size:13px} th,td{text-align:left;padding:3px 6px;border-bottom:1px solid #eceef2}
 th{background:#fafbfc} .scroll{overflow-x:auto}
 .spot{color:#b35c00} .od{color:#1f5fbf} .bad{color:#c0262d} .ok{color:#17813a} tr.unavailable{background:#fff1f1}
 svg.chart{width:100%;height:auto;max-height:260px;display:block} .tall{max-height:420px;overflow:auto} .legend span{margin-right:12px;font-size:12px}
 .mono{font-family:ui-monospace,monospace;font-size:12px}
 .rollups{display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:12px}
 article.decision{border-top:1px solid #eceef2;padding:8px 0} article.decision header{display:flex;gap:12px;flex-wrap:wrap}
 article.decision table{margin-top:4px} ul.held{margin:4px 0;color:#8a5a00}
 tr:target,article:target{background:#fff7d6}
 @media (max-width:700px){
  main{grid-template-columns:1fr;padding:8px;gap:10px}
  section{padding:10px}
  header.top{padding:8px 10px}
  .kpi b{font-size:18px}
  table{font-size:12px}
  svg.chart text{font-size:17px}
 }
)CSS";

// The page's only script: poll the JSON and swap in each section's HTML
// (at once, so a page served from a cache catches up). body[data-refreshed]
// holds the time of the last state shown.
constexpr const char* kScript = R"JS(
"use strict";
async function refresh(){
  try{
    const r=await fetch("api/v1/dashboard",{cache:"no-store"});
    if(!r.ok)throw new Error("api/v1/dashboard: HTTP "+r.status);
    const d=await r.json();
    for(const [name,html] of Object.entries(d.sections)){
      const el=document.getElementById("sec-"+name);
      if(el&&el.dataset.html!==html){el.innerHTML=html;el.dataset.html=html;}
    }
    document.getElementById("refresh-error").textContent="";
    document.body.dataset.refreshed=d.time||"";
  }catch(e){document.getElementById("refresh-error").textContent="refresh failed: "+e;}
}
refresh();setInterval(refresh,5000);
)JS";

// Sections shown across the whole grid.
bool Wide(const std::string& name) {
  return name == "kpis" || name == "budgets" || name == "rollups" || name == "market" || name == "decisions" ||
         name == "fleet";
}

}  // namespace

std::string DashboardPage(const DashboardInputs& in) {
  const auto sections = Sections(in);
  std::string out = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    "<title>gpuscaler</title><style>";
  out += kStyle;
  out += "</style></head><body><header class=\"top\"><h1>gpuscaler</h1><div id=\"sec-status\">" + sections.front().second +
         "</div><nav>"
         "<a href=\"reports\">cost report</a><a href=\"reports/report.csv\">CSV</a>"
         "<a href=\"reports/report.focus.csv\">FOCUS CSV</a><a href=\"reports/report.json\">JSON</a>"
         "<a href=\"metrics\">metrics</a><a href=\"healthz\">healthz</a><a href=\"readyz\">readyz</a>"
         "<a href=\"api/v1/status\">status API</a><a href=\"api/v1/dashboard\">dashboard API</a>"
         "<a href=\"api/v1/decisions\">decisions API</a><a href=\"api/v1/plan\">next plan</a>"
         "<a href=\"api/v1/snapshot\">snapshot</a><a href=\"api/v1/policy\">policy</a>"
         "<span id=\"refresh-error\" class=\"bad\"></span></nav></header><main>";
  for (size_t i = 1; i < sections.size(); ++i) {
    const auto& [name, html] = sections[i];
    out += "<section id=\"sec-" + name + "\"" + (Wide(name) ? " class=\"wide\"" : "") + ">" + html + "</section>";
  }
  out += "</main><script>";
  out += kScript;
  out += "</script></body></html>\n";
  return out;
}

std::string DashboardJson(const DashboardInputs& in) { return DashboardJsonOf(in.state, Sections(in)); }

std::string DecisionExplainPage(const DecisionReplay& replay, const std::vector<NodeRow>& launched,
                                const PublishedState& state) {
  const DecisionRecord& d = replay.decision.decision;
  const std::string id = std::to_string(replay.decision.id);
  const std::set<std::string> running = RunningInstances(state);
  std::string out = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>gpuscaler: decision " +
                    id + "</title><style>";
  out += kStyle;
  out += "</style></head><body><header class=\"top\"><h1>decision #" + id + "</h1><nav><a href=\"../\">dashboard</a>"
         "<a href=\"../api/v1/decisions/" + id + "/explain\">replay as JSON</a><a href=\"../reports\">cost report</a>"
         "</nav></header><main>";
  out += "<section class=\"wide\" id=\"decision\" data-decision=\"" + id + "\"><h2>What was decided</h2><p>" +
         TimeText(d.time) + ", source " + Esc(d.source) + ", policy " + Esc(d.policy_name) + " " +
         Esc(d.policy_hash.substr(0, 8)) + "; " + std::to_string(d.pending_units) + " pending unit(s), " +
         std::to_string(d.nodes) + " node(s); " + Usd(d.cost_before_usd_per_hour) + "/h → " +
         Usd(d.cost_after_usd_per_hour) + "/h (+" + Usd(d.expected_interruption_usd_per_hour) +
         "/h expected interruption cost)" + (d.scale_down_blocked ? "; scale-down held: stale signals" : "") +
         "</p><div class=\"mono summary\">" + Esc(d.summary) + "</div><div id=\"plan\">" +
         PlanHtml(json::parse(d.plan_json, nullptr, false), "../", running) + "</div>";
  std::vector<std::pair<std::string, std::string>> nodes;
  for (const NodeRow& n : launched) nodes.emplace_back(n.launch.instance_id, n.end_time ? n.cause : std::string());
  out += nodes.empty() ? "<p class=\"note\">launched no node</p>" : LaunchedHtml(nodes, "../", running);
  out += "</section>";
  out += "<section class=\"wide\" id=\"replay\"><h2>Replayed from the stored input</h2><p class=\"" +
         std::string(replay.matches_recorded ? "ok" : "bad") + "\">" +
         (replay.matches_recorded ? "The planner, run again on the stored snapshot and policy, makes the plan it recorded."
                                  : "The replayed plan differs from the recorded one.") +
         "</p>";
  if (replay.governor_edited) {
    out += "<p class=\"note\">The governor edited the planner's plan before acting (holds, cooldowns); the planner's "
           "plan, replayed:</p>" +
           PlanHtml(ToJson(replay.plan), "../", running);
  }
  out += "</section></main></body></html>\n";
  return out;
}

}  // namespace gpuscaler::daemon
