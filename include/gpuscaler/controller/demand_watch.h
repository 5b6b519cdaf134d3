// What the loop learns from the demand it sees each tick: the classes'
// demand histories and forecasts (classes[].forecast), and the deadlines
// that passed with the work still pending or running.
//
// Each tick Update records the GPUs of every forecast class's pending and
// running work (the snapshot's: pending work beyond max_pending_units is not
// counted) and returns the classes' forecasts for the next snapshot. The
// daemon warms the histories at start from the signals' history
// (forecaster().Record before the first tick).
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/controller/forecast.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

struct ForecastUpdate {
  // The forecast classes' forecasts, in policy order (empty: no class has
  // one).
  std::vector<DemandForecast> forecasts;
  // What the planner would launch ahead for may have changed: a forecast
  // started or stopped, or the GPUs it asks for (rounded up) moved.
  bool changed = false;
};

// Whether `u`, with a deadline and a runtime of its own (total_work), can no
// longer finish by its deadline: its work left (expected_runtime, less the
// time since progressing_since when it runs) ends after the deadline even
// from `now` on. False without a stated runtime.
bool CannotFinishInTime(const DemandUnit& u, WallTime now);

class DemandWatch {
 public:
  // Records this tick's demand per forecast class and forecasts it; notes
  // forecasts that start or stop (with the fallback reason) in the report.
  ForecastUpdate Update(const Snapshot& snapshot, const Policy& policy, WallTime now, TickReport* report);
  // Counts, per class, the units in the snapshot that miss their deadline
  // (each unit once, while it is pending or running): when it passes, or
  // as soon as the work left, by the runtime the unit states, no longer
  // fits before it even running without a pause from now
  // (CannotFinishInTime).
  void CountMissedDeadlines(const Snapshot& snapshot, WallTime now, TickReport* report);

  DemandForecaster& forecaster() { return forecaster_; }
  const DemandForecaster& forecaster() const { return forecaster_; }
  // With an oracle (DemandForecaster::SetOracle): one note per class whose
  // last forecast was the oracle's, in policy order, saying so ("class api:
  // the forecast is an oracle: ..."), for the plan the forecast fed; none without.
  std::vector<std::string> OracleNotes() const;

 private:
  // The lead time of the class's cheapest suitable offering for its
  // representative unit: looked up again when the policy or the class's
  // shape changes, else every 5 minutes (prices and learned warm-ups move
  // slowly; the scan is over the whole catalog).
  struct LeadTimeLookup {
    std::string policy_hash;
    std::string shape;
    WallTime at{};
    bool found = false;
    Seconds lead_time{0};
  };
  // Within the minute, with the same demand and policy, a class's forecast
  // is the same (the history is kept per minute).
  struct CachedForecast {
    int64_t minute = 0;
    double demand = 0;
    std::string policy_hash;
    DemandForecast forecast;
  };

  // One forecast class's forecast from its history before this tick (or
  // the oracle's; then `*oracle` is set).
  DemandForecast ForecastClass(const Snapshot& snapshot, const Policy& policy, const WorkloadClassPolicy& c,
                               double demand_now, WallTime now, bool* oracle);
  const LeadTimeLookup& LeadTime(const Snapshot& snapshot, const Policy& policy, const WorkloadClassPolicy& c,
                                 WallTime now);

  DemandForecaster forecaster_;
  // Per forecast class: the GPUs its forecast asked for at the last tick
  // (rounded up), or "off".
  std::map<std::string, std::string> forecast_state_;
  std::map<std::string, CachedForecast> forecast_cache_;
  std::map<std::string, LeadTimeLookup> lead_time_cache_;
  std::set<std::string> deadlines_missed_;  // unit ids already counted
  std::vector<std::string> oracle_classes_;  // whose last forecast was the oracle's
};

}  // namespace gpuscaler
