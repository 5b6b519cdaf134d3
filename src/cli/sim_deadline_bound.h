// `gpuscaler sim --deadline-bound`: the offline deadline bound
// (sim/deadline_bound.h) set against the replay's at-once run, with what
// that run paid for the meetable work measured on a labelled replay and
// attributed by the report's cost model. Private to src/cli;
// bench/sim/deadline_bound (the study tool) uses it too.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_reader.h"
#include "sim/deadline_bound.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::cli {

// The at-once run the bound is set against: the same policy without its
// deadlines, forecasts and schedules, so the same work run at once.
inline constexpr std::string_view kAtOnceRun = "gpuscaler-reactive";

// Run `run`'s bill in the audit store behind `reader`, by team (idle under
// report::kIdle), as `gpuscaler report --run RUN --group-by team`
// attributes it. Errors: the report's (no such run: kInvalidInput).
Result<std::map<std::string, double>> CostByTeam(AuditReader& reader, const std::string& run);

// The measured shares (sim::MeasuredShares) of a bill by team (CostByTeam)
// of a labelled replay that cost `labelled_usd`.
sim::MeasuredShares SharesOf(const std::map<std::string, double>& by_team, double labelled_usd);

// The bound `bound` (sim::BoundDeadlines of `scenario`) against the run
// kAtOnceRun of `results`: replays kAtOnceRun on the labelled scenario
// (sim::LabelJobsByDeadline) into a temporary audit store in the system's
// temp folder (removed afterwards), measures its split, and compares
// (sim::CompareWithBound). `progress` is the labelled replay's
// (sim::RunOptions::progress). Errors: kInvalidInput when `results` has no
// kAtOnceRun; the store's or the report's, prefixed with the step.
Result<sim::BoundComparison> MeasureBound(const sim::Scenario& scenario, const sim::DeadlineBound& bound,
                                          const std::vector<sim::RunResult>& results,
                                          std::function<void(double)> progress = {});

}  // namespace gpuscaler::cli
