// How much of the best possible p95 queue-wait cut a forecast run reached:
// each run with a learned forecast against gpuscaler-reactive (the policy
// without forecasts) and gpuscaler-oracle (the policy with a perfect
// forecast, sim/demand_truth.h). Values and formatting only; deterministic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/runner.h"

namespace gpuscaler::sim {

// Costs this close (relative to the oracle run's) are "equal".
inline constexpr double kEqualCostFraction = 0.01;

struct OracleShare {
  std::string run;  // the forecast run's name
  double run_p95_s = 0;
  double reactive_p95_s = 0;
  double oracle_p95_s = 0;
  // (reactive p95 - run p95) / (reactive p95 - oracle p95), in percent;
  // nullopt when the oracle cut nothing (its p95 is not below reactive's).
  std::optional<double> share_pct;
  double run_cost_usd = 0;
  double oracle_cost_usd = 0;
  double cost_difference_usd = 0;  // run - oracle
  // cost_difference_usd relative to the oracle run's cost, in percent
  // (nullopt when the oracle run cost nothing).
  std::optional<double> cost_difference_pct;
  bool equal_cost = false;  // within kEqualCostFraction of the oracle's
};

// One per run of `results` with a learned forecast (RunResult::forecast),
// in order, when `results` hold both a gpuscaler-reactive and a
// gpuscaler-oracle run; empty otherwise.
std::vector<OracleShare> OracleShares(const std::vector<RunResult>& results);

// One line for the summary table ("share of the oracle's p95 cut (gpuscaler):
// 62.5% (p95 reactive 200s, gpuscaler 150s, oracle 120s); cost ...").
std::string DescribeOracleShare(const OracleShare& share);

}  // namespace gpuscaler::sim
