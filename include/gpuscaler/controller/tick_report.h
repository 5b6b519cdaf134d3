// What one tick of the control loop did: for the daemon's metrics and HTTP
// state, the simulator's results and tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/controller/cluster_nodes.h"
#include "gpuscaler/controller/scaling.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

// A node reached a stage of its life this tick, `seconds` after its launch:
// "registered" (a Kubernetes node names the instance), "gpus_allocatable"
// (Ready with nvidia.com/gpu allocatable), "first_pod" (work runs on it).
struct NodeMilestone {
  std::string family;  // instance family ("g5"), or the type when unknown
  std::string stage;
  double seconds = 0;
};

struct TickReport {
  WallTime time{};
  bool planned = false;     // false: the previous plan was reused
  std::string gate_reason;  // why the replan gate planned or reused
  int64_t decision_id = 0;  // 0 when no decision was recorded
  Plan plan;                // after the governor (empty when reused)
  int nodes_requested = 0;
  int nodes_launched = 0;
  // Accepted by the cloud but not listed yet (launching placeholders).
  int nodes_in_flight = 0;
  // Instances given up because they did not register in time (or an
  // accepted launch whose instances never appeared).
  int registration_failures = 0;
  int nodes_terminated = 0;
  // Terminations that failed: the intent could not be recorded, or the
  // cloud refused or failed the call (each also in `errors`).
  int terminations_failed = 0;
  int capacity_errors = 0;
  // "Replace with cheaper" moves whose old node waits for its replacement.
  int replacements_waiting = 0;
  int drains_started = 0;  // node drains started (or resumed) this tick
  // Drains that ended this tick (the instance terminated when drained).
  std::vector<DrainOutcome> drains_ended;
  int interruption_notices = 0;
  int rebalance_recommendations = 0;
  std::vector<NodeMilestone> milestones;
  std::vector<std::string> blocked_classes;
  // What observing the fleet did to nodes this tick (repairs, registration
  // timeouts, responses to rebalance recommendations), one line per node,
  // for the plan's notes and the log. Observation writes only these; the
  // governor's holds are in `governor`.
  std::vector<std::string> node_notes;
  GovernorResult governor;
  // Demand forecasts (classes[].forecast) that started or stopped being
  // used this tick, with the reason (a class without enough history is
  // planned reactively), for the log.
  std::vector<std::string> forecast_notes;
  // Units whose deadline passed this tick while they were still pending or
  // running, by class (each unit counted once).
  std::map<std::string, int> deadlines_missed;
  // The spot price source: seconds since it last answered (since the
  // controller started when it has not), and why plans may not act on its
  // prices, with the last error when there was one (empty: they may).
  Seconds price_age{0};
  std::string stale_prices;
  // Non-fatal problems this tick (provider or store errors), in order.
  std::vector<Error> errors;

  // Keeps `s`'s error, if any, among this tick's problems.
  void Record(const Status& s) {
    if (!s.ok()) errors.push_back(s.error());
  }
};

}  // namespace gpuscaler
