// The figures the dashboard shows, computed from the published state and
// the audit database: the budgets, each node's price split over its work,
// the rollups, the spot market in the order shown, the charts' series and
// the JSON API. dashboard.cc renders them as HTML. Pure functions of their
// arguments. Private to src/daemon.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dashboard.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "state.h"

namespace gpuscaler::daemon {

// Billed nodes: launching placeholders (no instance id yet) are not paid for.
inline bool Billed(const Node& n) { return !n.instance_id.empty(); }

// A node as the dashboard names it: its instance id, else (launching) its id.
inline std::string NodeName(const Node& n) { return n.instance_id.empty() ? n.id : n.instance_id; }

// One node's price split over the work on it by GPU share, the rest idle
// (SplitNodePrice: the rule the budgets, the usage meter and the reports
// use). A row per unit holding GPUs, and one for the idle rest, if any (a
// node without GPUs is all idle), with empty class and team. `policy`
// (nullable) maps units to teams.
struct Attribution {
  std::string workload_class;
  std::string team;
  double gpus = 0;
  double usd_per_hour = 0;
};
std::vector<Attribution> Attribute(const Snapshot& snapshot, const Node& n, const Policy* policy);

// CountFleet of the published snapshot; zeros before the first tick.
FleetCounts CountFleet(const PublishedState& s);

// The instance ids of the snapshot's billed nodes (those with a row on the
// dashboard now).
std::set<std::string> RunningInstances(const PublishedState& s);

// A budget of the policy at the last tick: its spend rate, month to date,
// the month's end projected at that rate, what it allows per hour now
// (infinity: unlimited) and its status ("no cap", "within", "over the hard
// hourly cap", "projected over the soft monthly cap", ...).
struct BudgetRow {
  std::string scope;  // global | pool | team
  std::string name;
  BudgetCap cap;
  double usd_per_hour = 0;
  double month_to_date_usd = 0;
  double projected_month_usd = 0;
  double allowance_usd_per_hour = 0;
  std::string status;
};
// The global budget first, then each pool's and each team's the policy
// sets; empty before the first tick (no snapshot or policy).
std::vector<BudgetRow> Budgets(const PublishedState& s);

// What the billed nodes of the snapshot add up to under one key.
struct RollupSum {
  std::set<std::string> nodes;  // node names
  double gpus = 0;
  double usd = 0;  // per hour
};
// Per dimension ("pool", "zone", "capacity type", "class") and key: the
// nodes, GPUs and price. A class's are its GPU share of the nodes it runs
// on ("(idle capacity)": the rest). Requires s.snapshot.
std::map<std::string, std::map<std::string, RollupSum>> Rollups(const PublishedState& s);

// The spot offerings as the market table shows them.
struct SpotMarket {
  using Key = std::pair<std::string, std::string>;  // (instance type, zone)
  std::map<Key, int> running;                     // spot nodes running
  std::map<Key, std::pair<int, WallTime>> notices;  // interruptions in the window: count, last
  // The snapshot's spot offerings, in the order the operator looks for
  // them: those the fleet runs on (most nodes first), then those with
  // notices, then those marked unavailable, then the rest.
  std::vector<const Offering*> offerings;
};
// Requires in.state.snapshot, which the offerings point into.
SpotMarket SpotMarketOf(const DashboardInputs& in);

// The published series as the charts plot them: one value per time, NaN
// for no value (no global allowance, queued jobs not known).
struct DashboardSeries {
  std::vector<WallTime> times;
  std::vector<double> on_demand_nodes, spot_nodes, usd_per_hour, allowance_usd_per_hour, pending_units, queued_jobs;
};
DashboardSeries SeriesOf(const PublishedState& s);

// The burn-down chart's lines: the month to date at each published time,
// and from the last one the projection at the current rate to the month's
// end (one more time, where `global`'s projected_month_usd is reached).
struct BurnDown {
  std::vector<WallTime> times;
  std::vector<double> month_to_date_usd;  // NaN at the projected end
  std::vector<double> projected_usd;      // NaN but at the last two times
};
BurnDown BurnDownOf(const PublishedState& s, const BudgetRow& global);

// GET /api/v1/dashboard's body: {"time", "ticks", "sections": {name: html},
// "budgets": [...], "pending_by_class": [...]}.
std::string DashboardJsonOf(const PublishedState& s, std::vector<std::pair<std::string, std::string>> sections);

}  // namespace gpuscaler::daemon
