// Predicted vs realized cost per decision: what a decision's plan said its
// launches would cost per hour, against what the nodes it launched cost over
// their lives (docs/reports.md, "predictions" in the JSON report).
//
// A decision is in a report when a node it launched started in [from, to).
// Realized cost: each such node's price intervals × the time it ran, per
// second, from launch to its end (an interruption ends it) or, while it
// still runs, to the report's as_of; no minimum billed time. Predicted cost
// for the same time: each node's per-node price in the plan (the launch of
// its instance type, zone and capacity type; a node of an offering the plan
// did not name, such as a capacity fallback, takes the plan's price for its
// pool) × the hours it ran. The difference is what price moves, fallbacks
// and interruptions did to the plan.
//
// Thread-safety: BuildPredictions uses the reader it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler {
class AuditReader;
}

namespace gpuscaler::report {

struct DecisionPrediction {
  int64_t decision_id = 0;
  WallTime time{};
  double predicted_usd_per_hour = 0;  // the plan's launches, all nodes together
  int nodes_planned = 0;              // the plan's launch counts
  int nodes_launched = 0;             // nodes the store records for the decision
  int nodes_interrupted = 0;
  int nodes_running = 0;              // still running at as_of
  double node_hours = 0;              // the launched nodes' lives, to as_of
  double predicted_usd = 0;           // the plan's per-node prices × those hours
  double realized_usd = 0;            // price intervals × those hours
};

// (realized − predicted) / predicted, in percent; nullopt when nothing was
// predicted (no node hours yet, or a zero planned price).
std::optional<double> RelativeErrorPct(const DecisionPrediction& p);

// How well a set of decisions' predictions held, for finance.
struct PredictionSummary {
  int decisions = 0;
  int decisions_compared = 0;  // with a relative error (RelativeErrorPct)
  double predicted_usd = 0;    // sums over all decisions
  double realized_usd = 0;
  // Of |RelativeErrorPct| over the compared decisions, interpolated
  // between the closest ranks (PERCENTILE.INC); nullopt: none compared.
  std::optional<double> median_abs_error_pct;
  std::optional<double> p90_abs_error_pct;
  // Indices into the predictions, the largest |realized − predicted| in
  // dollars first (ties: the lower decision id), at most `worst` of them;
  // decisions whose prediction held to the micro-dollar are never listed.
  std::vector<size_t> worst;
};
PredictionSummary SummarizePredictions(const std::vector<DecisionPrediction>& predictions, size_t worst);

struct CostFacts;

// The decisions whose nodes started in [facts.from, facts.to), by decision
// id, from the nodes (and their prices) the facts already read, up to
// facts.as_of; the reader gives the decisions' plans. A decision row that
// cannot be read or whose plan_json is not a plan: kInternal naming the
// decision.
Result<std::vector<DecisionPrediction>> BuildPredictions(AuditReader& reader, const CostFacts& facts);

}  // namespace gpuscaler::report
