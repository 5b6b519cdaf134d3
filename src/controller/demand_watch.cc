#include "gpuscaler/controller/demand_watch.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/deadline_hold.h"
#include "gpuscaler/solver/forecast_demand.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

// The GPUs of each forecast class's pending and running work (nodes being
// terminated aside).
std::map<std::string, double> DemandByClass(const Snapshot& snapshot, const std::vector<std::string>& classes) {
  std::map<std::string, double> demand;
  for (const std::string& c : classes) demand[c] = 0;
  const auto count = [&demand](const DemandUnit& u) {
    auto it = demand.find(u.workload_class);
    if (it != demand.end()) it->second += GpuShare(u);
  };
  for (const DemandUnit& u : snapshot.pending) count(u);
  for (const Node& n : snapshot.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    for (const DemandUnit& u : n.running) count(u);
  }
  return demand;
}

std::string ShapeKey(const DemandUnit& shape) {
  std::string key = std::to_string(GpuShare(shape)) + "/" + std::to_string(shape.cpu_milli) + "/" +
                    std::to_string(shape.memory_mib) + "/" + std::to_string(shape.min_gpu_memory_mib) + "/" +
                    shape.mig_profile + "/" + (shape.interruptible ? "i" : "n") + "/" + shape.pool;
  for (const std::string& m : shape.gpu_models) key += m + ",";
  return key;
}

}  // namespace

ForecastUpdate DemandWatch::Update(const Snapshot& snapshot, const Policy& policy, WallTime now,
                                   TickReport* report) {
  std::vector<std::string> classes;
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (c.forecast) classes.push_back(c.name);
  }
  forecaster_.Retain(classes);
  oracle_classes_.clear();
  ForecastUpdate update;
  if (classes.empty()) {
    forecast_cache_.clear();
    lead_time_cache_.clear();
    update.changed = !snapshot.forecasts.empty() || !forecast_state_.empty();
    forecast_state_.clear();
    return update;
  }
  std::map<std::string, double> demand = DemandByClass(snapshot, classes);
  std::map<std::string, std::string> state;
  const int64_t minute = ToUnixSeconds(now) / 60;
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (!c.forecast) continue;
    const double demand_now = demand[c.name];
    auto cached = forecast_cache_.find(c.name);
    // An oracle's peak moves with the clock within the minute: never cached.
    if (forecaster_.oracle() == nullptr && cached != forecast_cache_.end() && cached->second.minute == minute &&
        cached->second.demand == demand_now && cached->second.policy_hash == policy.content_hash) {
      forecaster_.Record(c.name, now, demand_now);
      state[c.name] = forecast_state_[c.name];
      update.forecasts.push_back(cached->second.forecast);
      continue;
    }
    bool oracle = false;
    DemandForecast f = ForecastClass(snapshot, policy, c, demand_now, now, &oracle);
    forecaster_.Record(c.name, now, f.demand_gpus);
    if (oracle) oracle_classes_.push_back(c.name);
    // Not the fallback reason: its counts change every minute until the
    // forecast is on, and only the change between off and on is news.
    std::string key =
        f.levels.empty()
            ? std::string("off")
            : std::to_string(static_cast<int64_t>(std::ceil(ForecastGpusAt(f, c.forecast->quantile) - 1e-6)));
    auto last = forecast_state_.find(c.name);
    const bool was_off = last == forecast_state_.end() || last->second == "off";
    if (f.levels.empty() && (last == forecast_state_.end() || last->second != key)) {
      report->forecast_notes.push_back("class " + c.name + ": forecast off (" + f.fallback + "): planned reactively");
    } else if (!f.levels.empty() && was_off) {
      report->forecast_notes.push_back("class " + c.name + ": forecast on (horizon " + FormatDuration(f.horizon) +
                                       (oracle ? "; an oracle: " + forecaster_.oracle()->Description() : "") +
                                       ")");
    }
    update.changed = update.changed || last == forecast_state_.end() || last->second != key;
    state[c.name] = std::move(key);
    forecast_cache_[c.name] = {minute, demand_now, policy.content_hash, f};
    update.forecasts.push_back(std::move(f));
  }
  std::erase_if(forecast_cache_, [&state](const auto& entry) { return state.count(entry.first) == 0; });
  std::erase_if(lead_time_cache_, [&state](const auto& entry) { return state.count(entry.first) == 0; });
  forecast_state_ = std::move(state);
  return update;
}

DemandForecast DemandWatch::ForecastClass(const Snapshot& snapshot, const Policy& policy,
                                          const WorkloadClassPolicy& c, double demand_now, WallTime now,
                                          bool* oracle) {
  DemandForecast f;
  f.workload_class = c.name;
  f.demand_gpus = demand_now;
  std::vector<double> quantiles = ForecastQuantileGrid();
  quantiles.push_back(c.forecast->quantile);
  std::sort(quantiles.begin(), quantiles.end());
  quantiles.erase(std::unique(quantiles.begin(), quantiles.end()), quantiles.end());
  const LeadTimeLookup& lookup = LeadTime(snapshot, policy, c, now);
  f.lead_time = lookup.lead_time;
  f.horizon = c.forecast->horizon.value_or(f.lead_time);
  if (!lookup.found && !c.forecast->horizon) {
    f.fallback = "no suitable offering to take the lead time from";
  } else {
    // The forecast reads the history before this tick's sample: what it
    // predicts is compared with the present, never fed by it.
    ForecastResult r = forecaster_.Forecast(c.name, now, f.demand_gpus, f.horizon, quantiles);
    f.levels = std::move(r.levels);
    f.fallback = std::move(r.fallback);
    *oracle = r.oracle;
  }
  return f;
}

std::vector<std::string> DemandWatch::OracleNotes() const {
  std::vector<std::string> notes;
  if (forecaster_.oracle() == nullptr) return notes;
  for (const std::string& c : oracle_classes_) {
    notes.push_back("class " + c + ": the forecast is an oracle: " + forecaster_.oracle()->Description() +
                    "; not learned from the class's history");
  }
  return notes;
}

const DemandWatch::LeadTimeLookup& DemandWatch::LeadTime(const Snapshot& snapshot, const Policy& policy,
                                                         const WorkloadClassPolicy& c, WallTime now) {
  const DemandUnit shape = RepresentativeUnit(snapshot, c);
  const std::string shape_key = ShapeKey(shape);
  LeadTimeLookup& lookup = lead_time_cache_[c.name];
  if (lookup.policy_hash != policy.content_hash || lookup.shape != shape_key || now - lookup.at >= Seconds(300)) {
    const std::optional<SuitableOffering> cheapest = CheapestSuitableOffering(snapshot, policy, c, shape);
    lookup.found = cheapest.has_value();
    lookup.lead_time = cheapest ? LeadTimeOf(snapshot, *cheapest->offering, *cheapest->type) : Seconds(0);
    lookup.policy_hash = policy.content_hash;
    lookup.shape = shape_key;
    lookup.at = now;
  }
  return lookup;
}

bool CannotFinishInTime(const DemandUnit& u, WallTime now) {
  // A runtime the work states only: a class's guess proves nothing.
  if (!u.deadline || u.total_work.count() <= 0) return false;
  const Seconds left = WorkLeft(u, now);
  return left.count() > 0 && now + left > *u.deadline;
}

void DemandWatch::CountMissedDeadlines(const Snapshot& snapshot, WallTime now, TickReport* report) {
  std::set<std::string> present;
  const auto check = [&](const DemandUnit& u) {
    if (!u.deadline) return;
    present.insert(u.id);
    if ((now > *u.deadline || CannotFinishInTime(u, now)) && deadlines_missed_.insert(u.id).second)
      report->deadlines_missed[u.workload_class] += 1;
  };
  for (const DemandUnit& u : snapshot.pending) check(u);
  for (const Node& n : snapshot.nodes) {
    for (const DemandUnit& u : n.running) check(u);
  }
  // Units that finished or left are forgotten: the set stays as large as
  // the work in flight.
  std::erase_if(deadlines_missed_, [&present](const std::string& id) { return present.count(id) == 0; });
}

}  // namespace gpuscaler
