// The operator's dashboard: the page at "/", the JSON it polls
// (/api/v1/dashboard) and the decision explain page (/decisions/ID). HTML is
// rendered here, on the server, from the published state and the audit
// database; the page's inline script only swaps in the sections the JSON
// carries. No Beast or Asio here (the routes are in handlers.cc). Private to
// src/daemon.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/daemon/decision_replay.h"
#include "gpuscaler/store/audit_reader.h"
#include "state.h"

namespace gpuscaler::daemon {

// A recorded decision as the dashboard lists it.
struct DashboardDecision {
  DecisionRow row;
  std::vector<std::string> held;  // the governor's and actuator's holds
  // Instances the decision launched (the audit store's node rows), with
  // their end cause ("" while running).
  std::vector<std::pair<std::string, std::string>> launched;
};

// An interruption the controller saw end a spot node.
struct DashboardInterruption {
  std::string instance_id;
  std::string instance_type;
  std::string zone;
  WallTime time{};
};

// Everything a render needs; read once per state version.
struct DashboardInputs {
  PublishedState state;
  // The newest decisions that launched, removed, left unplaced or held back
  // something, newest first; `quiet_decisions` newer ones did none of that.
  std::vector<DashboardDecision> decisions;
  int quiet_decisions = 0;
  std::map<std::string, int64_t> launched_by;  // instance id -> decision id (0: found running)
  std::vector<DashboardInterruption> interruptions;  // within kNoticeWindow, newest first
  std::string store_error;  // the audit database could not be read: why
};

inline constexpr size_t kDashboardDecisions = 15;
// How far back (in decisions) the dashboard looks for ones that acted.
inline constexpr int kDecisionsScanned = 300;
inline constexpr std::chrono::hours kNoticeWindow{24};

// Reads the recent decisions, who launched each node and the recent
// interruptions from the audit database (when the daemon has one). A read
// error is kept in store_error and shown on the page, never thrown.
DashboardInputs ReadDashboardInputs(PublishedState state);

// GET /: the whole page.
std::string DashboardPage(const DashboardInputs& in);
// GET /api/v1/dashboard: {"time", "sections": {name: html}, "budgets": [...]}.
std::string DashboardJson(const DashboardInputs& in);
// GET /decisions/ID: the decision replayed, with the nodes it launched
// (links to their rows on the dashboard while they run).
std::string DecisionExplainPage(const DecisionReplay& replay, const std::vector<NodeRow>& launched,
                                const PublishedState& state);

// One line of a time chart.
struct ChartSeries {
  std::string label;
  std::string color;
  std::vector<double> values;  // one per time
  bool dashed = false;
};
// A horizontal line across a chart (a cap).
struct ChartLevel {
  std::string label;
  std::string color;
  double value = 0;
  std::string css_class;
};
// An SVG line chart (or stacked areas) with a labelled time axis (UTC) and
// a value axis. `times` must be ascending and as long as every series.
// Without points it draws the axes and says that there is no data yet.
std::string TimeChartSvg(const std::string& id, const std::string& title, const std::vector<WallTime>& times,
                         const std::vector<ChartSeries>& series, bool stacked, const std::vector<ChartLevel>& levels,
                         const std::string& unit);

// The page's chart sections, name -> inner HTML: "chart-burndown" (the month
// to date and its projection against the global monthly cap), "chart-nodes",
// "chart-cost" (the spend rate against the global hourly cap and allowance)
// and "chart-queue".
void AddChartSections(const PublishedState& s, std::map<std::string, std::string>* sections);

}  // namespace gpuscaler::daemon
