// The replay: one scenario through the production control loop
// (Controller::Tick) with one planner function, in a simulated World (the
// virtual clock, the simulated cloud and the workload; see world.h), with
// the controller's simulation preset (ControllerOptions::ForSimulation).
//
// The simulated cloud's bills are the ground truth: total_cost_usd is their
// sum. Deterministic: same scenario, planner and seed, same result.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/audit_store.h"
#include "sim/demand_truth.h"
#include "sim/scenario.h"
#include "sim/sim_cloud.h"
#include "sim/workload.h"
#include "sim/world.h"

namespace gpuscaler::sim {

class Workload;

struct Percentiles {
  double p50 = 0;
  double p95 = 0;
  double p99 = 0;
  int64_t count = 0;
};

// Nearest-rank percentiles of `values` (sorted in place).
Percentiles ComputePercentiles(std::vector<int64_t>* values);

// The fleet (nodes, spot nodes, GPUs) after one tick of a replay, the work
// and what it cost.
struct TimePoint : FleetCounts {
  WallTime time{};
  int64_t queued_jobs = 0;
  int64_t running_jobs = 0;
  double usd_per_hour = 0;
  bool planned = false;
};

struct RunResult {
  std::string name;         // "gpuscaler" or a baseline name
  std::string policy_name;
  // Where the run's demand forecasts came from; nullopt when its policy has
  // no class with classes[].forecast.
  std::optional<ForecastSource> forecast;
  double total_cost_usd = 0;
  std::map<std::string, double> cost_by_capacity_type;  // "on-demand", "spot"
  std::optional<double> savings_vs_on_demand_pct;
  Percentiles queue_wait_s;
  std::map<std::string, Percentiles> queue_wait_s_by_class;
  // Classes with a deadline in the scenario's policy: jobs met / missed /
  // still open at the end.
  std::map<std::string, DeadlineCounts> deadlines_by_class;
  double gpu_hours_lost = 0;
  // Gangs (multi-node jobs): starts, the wait from all members queued to the
  // start, and the GPU-hours members held while their gang could not start
  // (WorkloadStats::partial_gang_idle_gpu_seconds).
  int64_t gang_starts = 0;
  Percentiles gang_wait_s;
  double partial_gang_idle_gpu_hours = 0;
  double busy_gpu_hours = 0;
  double paid_gpu_hours = 0;
  double utilization = 0;
  int launches = 0;
  // Warm capacity (pools[].warm): starts of stopped nodes, and what the
  // stopped nodes' volumes cost (in total_cost_usd too).
  int warm_wakes = 0;
  double warm_stopped_usd = 0;
  // Of warm_wakes, those of spot nodes; and reclaims that stopped a spot
  // warm node instead of ending it (counted in interruptions too).
  int warm_spot_wakes = 0;
  int warm_interrupted_stops = 0;
  int terminations = 0;
  int interruptions = 0;
  int64_t requeues = 0;
  int64_t hard_budget_violations = 0;  // ticks on which a hard cap was exceeded
  int64_t jobs_total = 0;
  int64_t jobs_completed = 0;
  int64_t jobs_unfinished = 0;
  // Jobs still queued at the end that never ran, by the planner's last
  // reason for leaving them unplaced ("<reason>: <detail>"), or "never in the
  // planner's pending window" when no plan listed them.
  std::map<std::string, int64_t> never_started;
  int64_t ticks = 0;
  int64_t planner_calls = 0;
  int64_t controller_errors = 0;
  double wall_seconds = 0;  // filled by callers that time the run
  std::vector<InstanceBill> bills;
  // Reservations the cloud held (SimCloudConfig::reservations): each one's
  // cost, used and unused; the unused part is in total_cost_usd too.
  std::vector<ReservationUse> reservations;
  // Reserved slot-hours in use against those open, counted only over the
  // ticks when demand (GPUs of pending and running work) was at least the
  // open reservations' GPUs: how well the reservations were filled when
  // there was work to fill them. 0/0 when that never happened.
  double reserved_slot_hours_when_demand_exceeds = 0;
  double reserved_used_hours_when_demand_exceeds = 0;
  // Jobs on Capacity Block instances when the cloud took them back, all and
  // those whose runtime the planner knew (WorkloadStats::jobs_taken_back).
  int64_t jobs_taken_back = 0;
  int64_t jobs_taken_back_runtime_known = 0;
  std::map<std::pair<std::string, std::string>, int> peak_nodes;  // (offering key, pool)
  std::vector<TimePoint> timeseries;
};

struct RunSpec {
  std::string name;
  Policy policy;
  PlannerFn planner;  // empty: MakePlan
  // How long an offering stays marked unavailable after a capacity error,
  // flat; unset: the controller's growing back-off.
  std::optional<Seconds> unavailable_for;
  // The workload's pods of classes with an on-demand floor carry the
  // capacity-spread constraint (Workload::SplitFloorClasses): the greedy and
  // karpenter baselines, which hold the floor as a Karpenter user does.
  bool split_floor_classes = false;
  // How the cluster admits gang members: kWhole for gpuscaler (its
  // ProvisioningRequests), kEachPod for the gang-unaware baselines.
  GangAdmission gang_admission = GangAdmission::kWhole;
  // kOracle: the forecast classes of `policy` are forecast from the
  // scenario's true future demand (TrueDemand of its trace), given to the
  // controller's forecaster before the first tick.
  ForecastSource forecast = ForecastSource::kLearned;
};

struct RunOptions {
  AuditStore* store = nullptr;  // null: nothing recorded
  bool timeseries = false;
  // Called with the fraction done, at most about 200 times per run.
  std::function<void(double)> progress;
  // Adjusts the controller's simulation preset (ControllerOptions::
  // ForSimulation) before the replay starts: a daemon's settings, such as
  // writing open usage intervals, for a store read mid-replay.
  std::function<void(ControllerOptions&)> adjust_controller;
};

RunResult RunScenario(const Scenario& scenario, const RunSpec& spec, const RunOptions& options = {});

// The instance-id prefix of a run: short and stable per run name, so that
// runs sharing one audit store never reuse an instance id.
std::string RunIdPrefix(const std::string& run_name);

// One replay, advanced tick by tick: RunScenario is `while (!r.done())
// r.Step();` then Finish(). `scenario` must outlive the replay. Not
// thread-safe.
class Replay {
 public:
  Replay(const Scenario& scenario, RunSpec spec, RunOptions options = {});
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  WallTime end() const { return world_.end(); }
  bool done() const { return world_.done(); }
  // Runs the world's events up to the next tick, then the tick. Returns true
  // when a controller tick ran; `*tick` (if given) then holds its report.
  // Returns false (after the last events before end()) once done().
  bool Step(TickReport* tick = nullptr);
  // Ends the replay at end() (or now(), if earlier: an interrupted demo) and
  // returns the result. Call once.
  RunResult Finish();

  WallTime now() const { return world_.now(); }
  const Clock& clock() const { return world_.clock(); }
  const Controller& controller() const { return *controller_; }
  Controller& controller() { return *controller_; }
  const SimCloud& cloud() const { return world_.cloud(); }
  int64_t queued_jobs() const { return world_.queued_jobs(); }
  int64_t running_jobs() const { return world_.running_jobs(); }

 private:
  void AfterTick(WallTime t, const TickReport& report);
  // Accrues RunResult's reserved use over the tick that ends at `t`.
  void CountReservedUse(WallTime t);
  WallTime last_reserved_count_{};

  const Scenario& scenario_;
  RunSpec spec_;
  RunOptions options_;
  World world_;
  // The oracle the controller's forecaster reads (RunSpec::forecast); before
  // controller_, which holds a pointer to it.
  std::unique_ptr<TrueDemand> oracle_;
  std::unique_ptr<Controller> controller_;
  RunResult result_;
  std::unordered_map<std::string, std::string> last_unplaced_;  // unit id -> why
  int64_t total_ticks_ = 1;
  int64_t progress_every_ = 1;
  double month_start_cost_ = 0;
  std::string month_;
  bool finished_ = false;
};

// The specs for `gpuscaler sim`: "gpuscaler" is MakePlan with the scenario's
// policy (forecasts from scenario.forecast); "gpuscaler-oracle" the same with
// the oracle's forecasts (kInvalidInput when the policy has no forecast
// class); baselines by name (baselines.h). "static-peak" needs the peak of an
// on-demand run: pass it in `on_demand`. Unknown name: kNotFound listing
// RunNames().
Result<RunSpec> MakeRunSpec(const std::string& name, const Scenario& scenario, const RunResult* on_demand);

// Every name MakeRunSpec knows: gpuscaler's runs, then BaselineNames().
const std::vector<std::string>& RunNames();

// Whether the policy has a class with classes[].forecast.
bool HasForecasts(const Policy& policy);

// Runs `names` in order ("on-demand" is always run first, since the savings
// and static-peak need it) and fills savings_vs_on_demand_pct.
Result<std::vector<RunResult>> RunMany(const Scenario& scenario, const std::vector<std::string>& names,
                                       const RunOptions& options);

}  // namespace gpuscaler::sim
