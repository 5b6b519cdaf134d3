#include "sim/oracle_share.h"

#include <cmath>
#include <cstdio>

#include "gpuscaler/model/money.h"

namespace gpuscaler::sim {
namespace {

std::string FormatShare(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string ShareUsd(double usd) { return FormatUsd(usd, MoneyStyle::kBareCents); }

const RunResult* RunNamed(const std::vector<RunResult>& results, const std::string& name) {
  for (const RunResult& r : results) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

std::vector<OracleShare> OracleShares(const std::vector<RunResult>& results) {
  std::vector<OracleShare> out;
  const RunResult* reactive = RunNamed(results, "gpuscaler-reactive");
  const RunResult* oracle = RunNamed(results, "gpuscaler-oracle");
  if (reactive == nullptr || oracle == nullptr) return out;
  for (const RunResult& r : results) {
    if (r.forecast != ForecastSource::kLearned) continue;
    OracleShare s;
    s.run = r.name;
    s.run_p95_s = r.queue_wait_s.p95;
    s.reactive_p95_s = reactive->queue_wait_s.p95;
    s.oracle_p95_s = oracle->queue_wait_s.p95;
    const double best_cut = s.reactive_p95_s - s.oracle_p95_s;
    if (best_cut > 0) s.share_pct = 100 * (s.reactive_p95_s - s.run_p95_s) / best_cut;
    s.run_cost_usd = r.total_cost_usd;
    s.oracle_cost_usd = oracle->total_cost_usd;
    s.cost_difference_usd = s.run_cost_usd - s.oracle_cost_usd;
    if (s.oracle_cost_usd > 0) s.cost_difference_pct = 100 * s.cost_difference_usd / s.oracle_cost_usd;
    s.equal_cost = std::abs(s.cost_difference_usd) <= kEqualCostFraction * std::abs(s.oracle_cost_usd);
    out.push_back(std::move(s));
  }
  return out;
}

std::string DescribeOracleShare(const OracleShare& s) {
  std::string out = "share of the oracle's p95 cut (" + s.run + "): ";
  out += s.share_pct ? FormatShare("%.1f%%", *s.share_pct) : std::string("- (the oracle cut nothing)");
  out += FormatShare(" (p95 reactive %.0fs, ", s.reactive_p95_s) + s.run +
         FormatShare(" %.0fs, ", s.run_p95_s) + FormatShare("oracle %.0fs)", s.oracle_p95_s);
  out += "; cost " + s.run + " " + ShareUsd(s.run_cost_usd) + ", oracle " + ShareUsd(s.oracle_cost_usd);
  if (s.equal_cost) {
    out += ": at equal cost";
  } else {
    out += ": " + s.run + " " + (s.cost_difference_usd > 0 ? "+" : "-") +
           ShareUsd(std::abs(s.cost_difference_usd));
    if (s.cost_difference_pct) out += FormatShare(" (%+.1f%%)", *s.cost_difference_pct);
  }
  return out;
}

}  // namespace gpuscaler::sim
