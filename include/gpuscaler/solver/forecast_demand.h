// Capacity launched ahead of forecast demand (classes[].forecast).
//
// The controller forecasts each such class's peak demand within a horizon
// (controller/forecast.h) and writes the forecast into the snapshot
// (Snapshot::forecasts); the planner turns it into forecast units: units of
// the class's shape that it places like pending work of the lowest priority,
// so they take free room of existing nodes first (keeping those nodes from
// being removed) and open new nodes only when that pays. Forecast units are
// never in a plan's placements or unplaced list; a launch they open says so
// in its reason, and each class's forecast and what it launched ahead is a
// plan note. Pure functions of the snapshot and the policy, like the planner.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

// Ids of forecast units start with this. They exist only inside MakePlan:
// snapshots and plans never hold one.
inline constexpr const char* kForecastUnitPrefix = "forecast:";
bool IsForecastUnit(const DemandUnit& unit);

// The class's cheapest offering in the snapshot (by price per unit of the
// class's shape) that one unit of `unit` fits, that is available, and that a
// pool serving the class may buy (type, capacity type, region, zone; spot
// only for interruptible work). nullopt: none.
struct SuitableOffering {
  const Offering* offering = nullptr;
  const InstanceType* type = nullptr;
  double usd_per_hour_per_unit = 0;  // the unit's share of the node's price
};
std::optional<SuitableOffering> CheapestSuitableOffering(const Snapshot& snapshot, const Policy& policy,
                                                         const WorkloadClassPolicy& cls,
                                                         const DemandUnit& unit);

// Launch to GPUs allocatable for `offering`: the learned warm-up of its
// type's family in the snapshot, else the offering's launch latency.
Seconds LeadTimeOf(const Snapshot& snapshot, const Offering& offering, const InstanceType& type);

// The unit whose shape the class's forecast units take: among the class's
// pending and running units, the shape (GPUs, GPU models and memory, vCPU,
// memory, interruptibility, pins) that holds the most GPUs now (the first
// seen on a tie, pending before running); without any, the policy's class
// shape (WorkloadClassPolicy::Unit).
DemandUnit RepresentativeUnit(const Snapshot& snapshot, const WorkloadClassPolicy& cls);

// The GPU demand the forecast puts at `quantile` (levels interpolated
// linearly; below the first level: the first; above the last: the last).
double ForecastGpusAt(const DemandForecast& forecast, double quantile);

struct ForecastUnits {
  std::vector<DemandUnit> units;   // to place after the snapshot's pending work
  std::vector<std::string> notes;  // one per class with a forecast
};

// The forecast units of every class with a forecast in the snapshot and
// classes[].forecast in the policy. For each class, unit k (k = 1, 2, ...)
// covers demand above demand_gpus + (k-1) x its GPUs; it is added while
//  - that level is below the forecast at the policy's quantile;
//  - the expected cost of the wait it saves is at least the expected cost
//    of it idling: P x wait_cost x lead_time >= (1 - P) x price x horizon,
//    where P is the forecast's probability that peak demand passes that
//    level (the share of its quantile levels above it), wait_cost the
//    class's wait_cost_usd_per_hour (default: the unit's on-demand value)
//    and price the unit's share of the cheapest suitable offering's price;
//  - the price of the units added stays within max_idle_usd_per_hour.
// A class whose forecast has no levels gets none, and a note with the
// forecast's fallback reason (it is planned reactively).
ForecastUnits MakeForecastUnits(const Snapshot& snapshot, const Policy& policy);

}  // namespace gpuscaler
