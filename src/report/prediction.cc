#include "gpuscaler/report/prediction.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::report {
namespace {

using OfferingKey = std::tuple<std::string, std::string, std::string>;  // type, zone, capacity type

struct PlannedPrices {
  double usd_per_hour = 0;
  int nodes = 0;
  std::map<OfferingKey, double> per_node;      // by offering
  std::map<std::string, double> per_node_pool;  // by pool: the first launch's
};

Result<PlannedPrices> ReadPlan(int64_t decision_id, const std::string& plan_json) {
  const std::string where = "decision " + std::to_string(decision_id) + " plan_json";
  PlannedPrices p;
  try {
    const nlohmann::json plan = nlohmann::json::parse(plan_json);
    // A decision recorded without a plan (plan_json "{}") launched nothing by plan.
    if (!plan.contains("launches")) return p;
    for (const nlohmann::json& launch : plan.at("launches")) {
      const int count = launch.at("count").get<int>();
      const double usd = launch.at("usd_per_hour").get<double>();
      const nlohmann::json& o = launch.at("offering");
      p.usd_per_hour += usd;
      p.nodes += count;
      if (count <= 0) continue;
      const OfferingKey key{o.at("instance_type").get<std::string>(), o.at("zone").get<std::string>(),
                            o.at("capacity_type").get<std::string>()};
      p.per_node.emplace(key, usd / count);
      p.per_node_pool.emplace(launch.at("pool").get<std::string>(), usd / count);
    }
  } catch (const nlohmann::json::exception& e) {
    return Error::Internal(where + ": not a plan (" + e.what() + ")");
  }
  return p;
}

// The q-quantile of sorted values, linear between the closest ranks.
double Quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - static_cast<double>(below));
}

}  // namespace

std::optional<double> RelativeErrorPct(const DecisionPrediction& p) {
  if (p.predicted_usd <= 0) return std::nullopt;
  return 100.0 * (p.realized_usd - p.predicted_usd) / p.predicted_usd;
}

PredictionSummary SummarizePredictions(const std::vector<DecisionPrediction>& predictions, size_t worst) {
  PredictionSummary s;
  std::vector<double> abs_errors;
  std::vector<size_t> missed;
  for (size_t i = 0; i < predictions.size(); ++i) {
    const DecisionPrediction& p = predictions[i];
    ++s.decisions;
    s.predicted_usd += p.predicted_usd;
    s.realized_usd += p.realized_usd;
    if (std::optional<double> e = RelativeErrorPct(p)) abs_errors.push_back(std::fabs(*e));
    if (std::fabs(p.realized_usd - p.predicted_usd) >= 1e-6) missed.push_back(i);
  }
  s.decisions_compared = static_cast<int>(abs_errors.size());
  if (!abs_errors.empty()) {
    std::sort(abs_errors.begin(), abs_errors.end());
    s.median_abs_error_pct = Quantile(abs_errors, 0.5);
    s.p90_abs_error_pct = Quantile(abs_errors, 0.9);
  }
  auto gap = [&](size_t i) { return std::fabs(predictions[i].realized_usd - predictions[i].predicted_usd); };
  std::stable_sort(missed.begin(), missed.end(), [&](size_t a, size_t b) { return gap(a) > gap(b); });
  if (missed.size() > worst) missed.resize(worst);
  s.worst = std::move(missed);
  return s;
}

Result<std::vector<DecisionPrediction>> BuildPredictions(AuditReader& reader, const CostFacts& facts) {
  std::map<int64_t, std::vector<const NodeFact*>> by_decision;
  for (const NodeFact& n : facts.nodes) {
    if (n.decision_id != 0 && n.launch >= facts.from && n.launch < facts.to) by_decision[n.decision_id].push_back(&n);
  }
  const WallTime as_of = facts.as_of;
  AuditReader::ConsistentRead consistent(reader);
  std::vector<DecisionPrediction> out;
  out.reserve(by_decision.size());
  for (const auto& [id, launched] : by_decision) {
    Result<AuditReader::DecisionPlanRow> row = reader.DecisionPlan(id);
    if (!row) return row.error().WithContext("predicted vs realized cost");
    Result<PlannedPrices> planned = ReadPlan(id, row->plan_json);
    if (!planned) return planned.error();
    DecisionPrediction p;
    p.decision_id = id;
    p.time = row->time;
    p.predicted_usd_per_hour = planned->usd_per_hour;
    p.nodes_planned = planned->nodes;
    for (const NodeFact* n : launched) {
      NodeLifecycle life;
      life.offering.usd_per_hour = n->launch_usd_per_hour;
      life.launch_time = n->launch;
      life.end_time = n->end;
      life.prices = n->prices;
      const WallTime end = std::max(n->launch, std::min(as_of, n->end.value_or(as_of)));
      const double hours = std::chrono::duration<double>(end - n->launch).count() / 3600.0;
      double per_node = n->launch_usd_per_hour;  // neither its offering nor its pool planned: its own launch price
      if (auto it = planned->per_node.find({n->instance_type, n->zone, std::string(ToString(n->capacity_type))});
          it != planned->per_node.end()) {
        per_node = it->second;
      } else if (auto pool = planned->per_node_pool.find(n->pool); pool != planned->per_node_pool.end()) {
        per_node = pool->second;
      }
      p.nodes_launched += 1;
      if (n->cause == "interrupted") p.nodes_interrupted += 1;
      if (!n->end || *n->end > as_of) p.nodes_running += 1;
      p.node_hours += hours;
      p.predicted_usd += per_node * hours;
      p.realized_usd += life.SpendUsd(n->launch, end);
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace gpuscaler::report
