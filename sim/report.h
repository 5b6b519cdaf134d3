// Output of `gpuscaler sim`: the terminal table, the JSON document and the
// time-series CSV. Pure formatting; deterministic.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/status.h"
#include "sim/deadline_bound.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {

// The summary table: one column per run. With `bound` (--deadline-bound),
// two rows per run (its saving against the bound's at-once run, and that as
// a share of the bound's saving) and the bound's figures below the table.
std::string FormatSummaryTable(const Scenario& scenario, const std::vector<RunResult>& results,
                               const BoundComparison* bound = nullptr);

// {"scenario": {...}, "results": [one object per run]}; each run has at least
// name, forecast ("learned", "oracle", or null without forecast classes),
// total_cost_usd, cost_by_capacity_type, savings_vs_on_demand_pct,
// queue_wait_s {p50, p95, p99}, queue_wait_s_by_class, gpu_hours_lost,
// utilization, hard_budget_violations, jobs_completed, jobs_unfinished.
// With gpuscaler-reactive and gpuscaler-oracle among the runs, each run with
// a learned forecast has oracle_p95_cut (OracleShare: share_pct, p95_s,
// reactive_p95_s, oracle_p95_s, cost_usd, oracle_cost_usd,
// cost_difference_usd, cost_difference_pct, equal_cost); the table has a
// line for each below it.
// With `bound`: each run also has saving_vs_at_once_usd,
// saving_vs_at_once_pct and share_of_bound_saving_pct (null when the bound
// saves nothing), and the document a "deadline_bound" object: at_once_run,
// at_once_usd, labelled_at_once_usd, best_deferred_usd, saving_usd,
// saving_pct, split (the most generous one's name), splits [{name,
// description, meetable_usd, best_deferred_usd, saving_usd, saving_pct}],
// horizon_s, notice_s, and the relaxed model's totals meetable, unmeetable,
// no_deadline {jobs, gpu_hours, deferred_usd, deferred_spot_gpu_hours,
// at_once_usd, at_once_spot_gpu_hours, on_demand_usd}.
std::string FormatJson(const Scenario& scenario, const std::vector<RunResult>& results,
                       const BoundComparison* bound = nullptr);

// Columns: run,time,nodes,spot_nodes,gpus,queued_jobs,running_jobs,usd_per_hour,planned
std::string FormatTimeseriesCsv(const std::vector<RunResult>& results);

}  // namespace gpuscaler::sim
