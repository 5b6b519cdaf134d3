// What the HTTP side of the daemon reads: a copy of the engine's state made
// after each tick on the worker thread, published under a mutex. Handlers run
// on the I/O thread and never touch the engine, the controller or the store
// writer, so a slow request cannot stall a tick and a tick cannot tear a
// response. Private to src/daemon.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::daemon {

// The fleet (nodes, spot nodes, GPUs) at one tick, and what it cost.
struct SeriesPoint : FleetCounts {
  WallTime time{};
  double usd_per_hour = 0;
  int pending_units = 0;
  int64_t queued_jobs = -1;
  double month_to_date_usd = 0;
  // The global budget's hourly allowance at that tick (HourlyAllowanceUsd);
  // infinity when no global cap is set.
  double global_allowance_usd_per_hour = 0;
};

// Pending work of one workload class at the last tick, and how long its
// units have waited: since the tick that first saw each unit pending (this
// process's view; a restart starts the clocks again).
struct PendingClassStats {
  std::string workload_class;
  int units = 0;
  double gpus = 0;
  double wait_p50_s = 0;
  double wait_p90_s = 0;
  double wait_p99_s = 0;
  double wait_max_s = 0;
};

// Held back by the governor or the actuator (cooldowns, stabilisation,
// failed calls), one line each, for a recorded decision.
// A gang with members still pending: what it waits for, as the last plan
// saw it.
struct WaitingGang {
  std::string name;
  std::string workload_class;
  int size = 0;
  int pending = 0;  // members pending
  int running = 0;  // members already on nodes
  double wait_s = 0;  // since its oldest pending member was first seen
  std::string waits_for;
};

struct HeldActions {
  int64_t decision_id = 0;
  std::vector<std::string> notes;
};

struct PublishedState {
  std::string mode;
  double speed = 1;
  bool ready = false;   // a tick succeeded since start
  bool leader = true;   // without leader election: always
  bool paused = false;
  bool finished = false;
  int64_t ticks = 0;
  WallTime started_at{};
  std::optional<WallTime> last_tick_time;  // engine (virtual, in the demo) time
  std::shared_ptr<const Snapshot> snapshot;
  std::shared_ptr<const Policy> policy;
  int64_t policy_reloads = 0;
  int64_t policy_rejections = 0;
  std::string policy_errors;  // of the last rejected version
  std::string db_file;
  // The last tick.
  int64_t last_decision_id = 0;
  std::string last_summary;
  double cost_usd_per_hour = 0;
  double predicted_cost_usd_per_hour = 0;
  std::map<std::string, int> unplaced_by_reason;
  std::vector<std::string> blocked_classes;
  // The spot price source (TickReport::price_age, stale_prices).
  Seconds price_age{0};
  std::string stale_prices;
  std::vector<ClassSignal> signals;
  std::map<std::string, double> queue_depth;
  int64_t queued_jobs = -1;
  int64_t running_jobs = -1;
  std::vector<std::string> last_errors;
  std::deque<SeriesPoint> series;  // at most kMaxSeries, oldest first
  // Per class, in class name order.
  std::vector<PendingClassStats> pending_by_class;
  std::vector<WaitingGang> waiting_gangs;  // by longest wait
  // When each pending unit was first seen pending (shared: the copy each
  // reader takes stays cheap).
  std::shared_ptr<const std::map<std::string, WallTime>> pending_since;
  // The newest kMaxHeldDecisions decisions that held something back, oldest
  // first.
  std::deque<HeldActions> held;
};

inline constexpr size_t kMaxSeries = 720;
inline constexpr size_t kMaxHeldDecisions = 100;

class DaemonState {
 public:
  // A consistent copy (cheap: the snapshot and policy are shared).
  PublishedState Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  int64_t Ticks() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_.ticks;
  }
  template <typename F>
  void Update(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(state_);
    ++version_;
  }
  // The number of Updates so far: a render of the state (the status JSON)
  // holds until it changes.
  uint64_t Version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return version_;
  }
  // Loop liveness for /healthz: the control loop beats at least once per tick.
  void Beat(std::chrono::steady_clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    last_beat_ = now;
  }
  std::chrono::steady_clock::time_point last_beat() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_beat_;
  }

 private:
  mutable std::mutex mu_;
  PublishedState state_;
  uint64_t version_ = 0;
  std::chrono::steady_clock::time_point last_beat_{};
};

// Publishes what `tick` did (on the worker thread, after the tick).
void Publish(const Engine& engine, const EngineTick& tick, DaemonState* state);

// Each unit pending in `snapshot` with the time it was first seen pending:
// carried over from `before` (null: none), else `now`; units no longer
// pending are dropped.
std::shared_ptr<const std::map<std::string, WallTime>> PendingSince(
    const std::shared_ptr<const std::map<std::string, WallTime>>& before, const Snapshot& snapshot, WallTime now);
// Per class of the pending units: units, GPUs and the wait since first seen
// (nearest-rank percentiles), in class name order.
std::vector<PendingClassStats> PendingByClass(const Snapshot& snapshot, const std::map<std::string, WallTime>& since,
                                              WallTime now);

// GET /api/v1/status: the status JSON (mode, nodes, costs, series).
// Gangs with pending members (waiting_gangs.cc). `plan`: the last plan made
// (its unplaced reasons, launches and placements say what each waits for).
std::vector<WaitingGang> WaitingGangs(const Snapshot& snapshot, const Plan& plan,
                                      const std::map<std::string, WallTime>& since, WallTime now);

// As /api/v1/status and /api/v1/dashboard show them.
nlohmann::json WaitingGangsJson(const std::vector<WaitingGang>& gangs);

std::string StatusJson(const PublishedState& s);

}  // namespace gpuscaler::daemon
