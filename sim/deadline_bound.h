// An offline lower bound on what deferring work to its deadline can cost.
//
// Given a replay's scenario (the trace's jobs as the simulator builds them,
// the policy's class deadlines, the catalog and the spot market), it prices
// every job the cheapest way any schedule could, under relaxations that can
// only make the bound lower than what a real schedule pays:
//  - a job pays for its GPU share only (no idle GPUs, no node granularity),
//    at the cheapest per-GPU-hour price among the offerings its class may use
//    (pools, capacity types, interruptibility as the simulator applies them;
//    GPU model constraints ignored);
//  - zero lead time, no restart cost, free preemption and checkpointing: a
//    job may run in any pieces, of any length, at any moments;
//  - spot is usable whenever the market gives an offering capacity (> 0
//    nodes), and for the interruption notice after it drops to 0 (running
//    nodes keep working until the notice ends); no capacity limit, no
//    interruption hazard, no price cap of the policy;
//  - prices are the simulator's: the catalog's, then the market's price
//    points.
// A job "meetable" under its class's deadline (it fits between its
// submission and its due time, the simulator's DueAt) runs its duration in
// the cheapest seconds of [submission, due]. Every other job (unmeetable, or
// its class has no deadline) runs at once, [submission, submission +
// duration], in both the deferred and the at-once pricing.
//
// Work after the replay's end is not billed by the replay, so it is not
// counted here either: windows end at the horizon, and a meetable job whose
// due time lies past it needs only the part of its run that cannot be put
// after the horizon.
//
// CompareWithBound sets the bound against an at-once replay of the same
// scenario (`gpuscaler sim --deadline-bound`, bench/sim/deadline_bound).
//
// Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {

// One offering as seen over the replay: its price and, for spot, the nodes
// the market makes available, as steps (offsets from the replay's start,
// ascending; each value holds from its time to the next step's).
struct OfferingSteps {
  Offering offering;
  int gpus_per_node = 0;
  std::vector<std::pair<Seconds, double>> usd_per_hour;  // first at 0
  std::vector<std::pair<Seconds, int>> available_nodes;  // spot: first at 0
};

// The offerings of `scenario` (its catalog's, in its regions) as the
// simulated cloud prices them and the market limits them: catalog prices
// then the market's price points; spot capacity from the market's
// availability points, the cloud config's capacity before the first point
// and for offerings without any. Offerings without GPUs are left out.
std::vector<OfferingSteps> MarketSteps(const Scenario& scenario);

// The cheapest price per GPU-hour over time among some offerings: piecewise
// constant, each segment from its start to the next one's, the last for
// ever.
struct PriceSegment {
  Seconds start{0};
  double usd_per_gpu_hour = 0;
  bool spot = false;  // the cheapest at this time is a spot offering
};
using PriceTimeline = std::vector<PriceSegment>;  // ascending, first at 0

// The timeline of `offerings`: on-demand ones always usable, spot ones while
// they have nodes and for `notice` after each drop to 0. kInvalidInput when
// nothing is usable at some time (no on-demand offering and spot down).
Result<PriceTimeline> CheapestPerGpu(const std::vector<const OfferingSteps*>& offerings, Seconds notice);

// The cheapest `run` seconds of [from, to) under `prices`, for one GPU.
struct RunCost {
  double usd_per_gpu = 0;  // cost for one GPU
  Seconds spot{0};         // seconds of the run on spot
};
// kInvalidInput when run < 0 or run > to - from.
Result<RunCost> CheapestRun(const PriceTimeline& prices, Seconds from, Seconds to, Seconds run);

// Totals over a set of jobs.
struct JobTotals {
  int64_t jobs = 0;
  double gpu_hours = 0;     // GPU share x the run counted (within the horizon)
  double deferred_usd = 0;  // the bound: each job at its cheapest
  double deferred_spot_gpu_hours = 0;
  double at_once_usd = 0;  // the same relaxations, run at submission
  double at_once_spot_gpu_hours = 0;
  double on_demand_usd = 0;  // the same run at the cheapest on-demand price
};

struct DeadlineBound {
  JobTotals meetable;              // deferred to their deadline
  JobTotals unmeetable;            // longer than their deadline: at once in both
  JobTotals no_deadline;           // classes without a deadline: at once in both
  int64_t jobs_without_gpu = 0;    // CPU-only work, not priced
  int64_t jobs_after_horizon = 0;  // submitted after the replay's end
  Seconds notice{0};
  Seconds horizon{0};

  // Every priced job at once, and with the meetable ones deferred.
  double AtOnceUsd() const { return meetable.at_once_usd + unmeetable.at_once_usd + no_deadline.at_once_usd; }
  double DeferredUsd() const {
    return meetable.deferred_usd + unmeetable.at_once_usd + no_deadline.at_once_usd;
  }
};

// The bound for `scenario`, its policy's deadlines judging the jobs (as
// `gpuscaler sim` judges every run). kInvalidInput naming the job when a
// job's class may use no GPU offering of the scenario.
Result<DeadlineBound> BoundDeadlines(const Scenario& scenario);

// The teams LabelJobsByDeadline gives the jobs.
inline constexpr std::string_view kMeetableTeam = "meetable";
inline constexpr std::string_view kUnmeetableTeam = "unmeetable";
inline constexpr std::string_view kNoDeadlineTeam = "no-deadline";

// `scenario` with each job's team set by how its class's deadline judges it,
// as BoundDeadlines does: kMeetableTeam, kUnmeetableTeam or kNoDeadlineTeam.
// A replay of it records its usage under those teams, so its bill split by
// team (the report's cost model) tells what each kind of work cost. The
// planner groups units by team and budget.teams caps spend by team, so a
// labelled replay may run differently from the plain one: compare totals.
Scenario LabelJobsByDeadline(Scenario scenario);

// One way of telling what an at-once run paid for the meetable work, and
// the best deferred cost it gives: the run's bill less that share plus the
// bound (the unmeetable and no-deadline work costs what it cost at once).
// The larger the share, the larger the saving: the more generous to
// deferral.
struct BoundSplit {
  std::string name;         // "measured", "measured-with-idle", "on-demand", "on-demand-with-idle"
  std::string description;  // for people
  double meetable_usd = 0;  // the share as told (the saving caps it at the run's bill)
  double best_deferred_usd = 0;
  double saving_usd = 0;  // the at-once bill - best_deferred_usd; may be < 0
  double saving_pct = 0;  // of the at-once bill; 0 when it is 0
};

// The bound against one at-once run.
struct BoundComparison {
  DeadlineBound bound;
  std::string at_once_run;  // its name, e.g. "gpuscaler-reactive"
  double at_once_usd = 0;   // its bill
  // When measured: the bill of its labelled replay (LabelJobsByDeadline),
  // whose split by team the measured splits use. Equal to at_once_usd when
  // the labels changed nothing.
  std::optional<double> labelled_at_once_usd;
  std::vector<BoundSplit> splits;  // at least one
  size_t most_generous = 0;        // the split with the largest saving

  const BoundSplit& Best() const { return splits[most_generous]; }
  // What run `r` saves against the at-once run (its bill - r's), and that as
  // a percentage of the best split's saving: the share of the most any
  // schedule could save. nullopt when that saving is not above 0.
  double SavingUsd(const RunResult& r) const { return at_once_usd - r.total_cost_usd; }
  std::optional<double> ShareOfBoundPct(const RunResult& r) const;
};

// What a replay of the at-once run's labelled scenario (LabelJobsByDeadline)
// measured: its bill, and the parts of it the report's cost model
// attributes to team kMeetableTeam and to idle (`gpuscaler report
// --group-by team`).
struct MeasuredShares {
  double meetable_usd = 0;
  double idle_usd = 0;
  double labelled_usd = 0;
};

// The bound against the at-once run `at_once` of the same scenario. The
// splits, in order:
//  - "on-demand": the meetable work at the cheapest on-demand price
//    (bound.meetable.on_demand_usd), no idle;
//  - with `measured`: "measured" (its meetable_usd) and "measured-with-idle"
//    (meetable_usd + idle_usd);
//  - without: "on-demand-with-idle" ("on-demand" plus every idle and lost
//    GPU-hour of the run at the meetable work's mean on-demand price).
// A split's share is capped at the run's bill. The most generous is the one
// with the largest saving (the first of equals).
BoundComparison CompareWithBound(const DeadlineBound& bound, const RunResult& at_once,
                                 const std::optional<MeasuredShares>& measured);

}  // namespace gpuscaler::sim
