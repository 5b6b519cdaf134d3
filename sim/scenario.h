// Scenarios: everything one replay needs besides the planner: the load (a
// trace), the spot market, the catalog, the policy, the simulated cloud's
// parameters, the start instant and the horizon.
//
// Built-in scenarios are generated from a seed (no files needed):
//  - "demo": 3 days (--days changes it) of diurnal inference load (1-GPU
//    serving replicas on A10G/L4, peak at 15:00 UTC, trough at 03:00) plus
//    bursty training (about four bursts a day of 3–12 multi-GPU jobs on
//    A10G/L4/A100/H100, 30-minute checkpoints; a quarter of the bursts also
//    bring a distributed job: a gang of 2-4 members on 8-GPU A100/H100 nodes,
//    started and stopped together) and a few non-interruptible
//    evaluation jobs; spot prices follow a mean-reverting random walk around
//    the catalog's spot price; spot interruptions at per-family rates
//    (g5/g6 0.02, p4d 0.05, p5 0.08 per node-hour) with 2-minute notices;
//    tight spot capacity for 8-GPU types. docs/simulator.md has the numbers.
//  - "scale-30d-100k": 30 days, exactly 100,000 jobs of the same kinds, for
//    the speed bar.
// Catalog: config/catalogs/aws.yaml when it can be loaded (searched from the
// working directory up), else a built-in table of real us-east-1 g5, g6,
// p4d and p5 prices, so the demo never depends on files.
#pragma once

#include "gpuscaler/model/builtin_catalog.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "sim/sim_cloud.h"
#include "sim/trace.h"

namespace gpuscaler::sim {

// Where the forecasts of classes[].forecast come from in a replay: the
// controller's own, learned from the demand the replay has shown it so far
// (what the daemon does), or an oracle's: the trace's true future demand
// (sim/demand_truth.h), the best any forecast could know.
enum class ForecastSource { kLearned, kOracle };
std::string_view ToString(ForecastSource source);  // "learned", "oracle"

struct Scenario {
  std::string name;
  std::string description;
  WallTime start{};
  Seconds horizon{0};  // the replay runs over [start, start + horizon)
  Catalog catalog;
  std::string catalog_source;  // file name or "built-in"
  std::vector<std::string> regions{"us-east-1"};
  Policy policy;
  std::string policy_source;
  Trace trace;
  SpotMarket market;
  SimCloudConfig cloud;
  uint64_t seed = 1;
  // What the planner is told of a job's runtime: what is left of its real
  // duration (true; a trace's durations are known in advance), or its
  // class's shape.expected_runtime, as the daemon tells it (false).
  bool runtimes_known = true;
  // The forecasts of the runs that keep the policy's (gpuscaler,
  // gpuscaler-held); gpuscaler-oracle's are always the oracle's.
  ForecastSource forecast = ForecastSource::kLearned;
};

const std::vector<std::string>& BuiltinScenarioNames();

// The policy the built-in scenarios use: pools "inference" (g5, g6) and
// "training" (multi-GPU g5/g6, p4d, p5), classes inference (at most 60 % on
// spot), training (spot allowed, checkpoints) and eval (never spot); 60 s ticks.
Policy DemoPolicy();

// `days` overrides the horizon (and, for demo, the generated length).
// Unknown name: kNotFound listing the known ones.
Result<Scenario> MakeBuiltinScenario(const std::string& name, uint64_t seed, std::optional<int> days,
                                     const Catalog& catalog);

// Makes each job's tolerance of a move agree with its policy class, as the
// daemon does for pending work (UnitForClass): for a job whose class the
// policy names, with trace.behaviour_from_policy (public formats, series
// turned into jobs) interruptible, checkpoint_interval, restart_cost and
// priority become the class's; otherwise the job stays interruptible only if
// the class is too (the planner already reads it so; the scheduler must not
// put a non-interruptible class's job on spot either). Jobs of classes the
// policy does not name keep the reader's values.
void ApplyClassBehaviour(const Policy& policy, Trace* trace);

// The GPU taint of the pools (key kGpuTaintKey, effect NoSchedule or
// NoExecute) kept by trace jobs, as Kubernetes keeps it for pods: a trace
// says nothing of tolerations, so a job that needs a GPU tolerates it (the
// ExtendedResourceToleration admission adds that toleration to pods that
// request the resource) and a job that needs none does not; other taints say
// nothing a trace knows and are taken as tolerated. Then, as the daemon pins
// a pod's unit: of the job's candidate pools (its class's, or all when the
// class names none or is not in the policy) a job that tolerates only some
// is pinned to the first of them in policy order, so the planner and the
// scheduler keep it off the others; a job that tolerates none is not
// replayed, and a warning in trace->stats counts such jobs. A job already
// pinned to a pool keeps its pin.
inline constexpr const char* kGpuTaintKey = "nvidia.com/gpu";
void ApplyPoolTaints(const Policy& policy, Trace* trace);

// A trace-driven scenario. Horizon: `days` if set, else the trace span plus
// one day to drain. A trace of GPU demand series is turned into jobs first
// (SeriesToJobs, sim/series_jobs.h); then ApplyClassBehaviour and
// ApplyPoolTaints. Spot
// interruptions: the market's events and availability drops, plus the
// catalog's per-offering hazard rates (from the market's spot advisor rows
// when given).
Scenario MakeTraceScenario(Trace trace, SpotMarket market, Catalog catalog, Policy policy, uint64_t seed,
                           std::optional<int> days);

}  // namespace gpuscaler::sim
