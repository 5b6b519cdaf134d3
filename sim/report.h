// Output of `gpuscaler sim`: the terminal table, the JSON document and the
// time-series CSV. Pure formatting; deterministic.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/status.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {

// The summary table: one column per run.
std::string FormatSummaryTable(const Scenario& scenario, const std::vector<RunResult>& results);

// {"scenario": {...}, "results": [one object per run]}; each run has at least
// name, total_cost_usd, cost_by_capacity_type, savings_vs_on_demand_pct,
// queue_wait_s {p50, p95, p99}, queue_wait_s_by_class, gpu_hours_lost,
// utilization, hard_budget_violations, jobs_completed, jobs_unfinished.
std::string FormatJson(const Scenario& scenario, const std::vector<RunResult>& results);

// Columns: run,time,nodes,spot_nodes,gpus,queued_jobs,running_jobs,usd_per_hour,planned
std::string FormatTimeseriesCsv(const std::vector<RunResult>& results);

}  // namespace gpuscaler::sim
