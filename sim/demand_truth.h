// The true future demand of a replay's classes, for the oracle forecast
// (`gpuscaler sim --forecast oracle`, the gpuscaler-oracle run): what a
// perfect forecaster would know, as the controller's DemandOracle.
//
// A class's true demand at an instant is the GPUs (GpuShare) of its trace
// jobs that would be pending or running then if every job started the moment
// it was submitted and ran its trace duration: the no-wait demand curve the
// trace states. A series trace turned into jobs (SeriesToJobs) gives back the
// series as GPUs. It is not what a replay's queue shows (work that waits
// stays longer, requeued work comes back), so it bounds what a forecast could
// know rather than scheduling anything. Built once from the trace before the
// replay; immutable after. Thread-safe for const use.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/controller/forecast.h"
#include "gpuscaler/model/time.h"
#include "sim/trace.h"

namespace gpuscaler::sim {

// One class's true demand: a step function of time.
class DemandCurve {
 public:
  DemandCurve() = default;
  // From (instant, GPUs added) changes, in any order; instants with a net
  // change of zero leave no step.
  explicit DemandCurve(std::vector<std::pair<WallTime, double>> changes);

  // The demand in force at `t` (0 before the first change).
  double At(WallTime t) const;
  // The highest demand at any instant of (from, to]; the demand at `from`
  // when nothing changes within. `to` <= `from`: the demand at `from`.
  double PeakWithin(WallTime from, WallTime to) const;
  // The instants where the demand changes, ascending, and the level from
  // each on.
  const std::vector<WallTime>& times() const { return times_; }
  const std::vector<double>& levels() const { return levels_; }

 private:
  double RangeMax(size_t first, size_t last) const;  // levels_[first..last]

  std::vector<WallTime> times_;
  std::vector<double> levels_;
  std::vector<double> tree_;  // max segment tree over levels_, size 2n
};

class TrueDemand final : public DemandOracle {
 public:
  // The curves of `classes` (every class with jobs when empty) from the
  // jobs of `trace`, submitted at `start` + their offset. A class asked for
  // that has no job has a curve of zero demand.
  TrueDemand(const Trace& trace, WallTime start, const std::vector<std::string>& classes = {});

  // The class's peak demand over (now, now + horizon]; nullopt for a class
  // not asked for.
  std::optional<double> PeakWithin(const std::string& workload_class, WallTime now,
                                   Seconds horizon) const override;
  std::string Description() const override;

  // Null for a class not asked for.
  const DemandCurve* Find(const std::string& workload_class) const;

 private:
  std::map<std::string, DemandCurve> curves_;
};

}  // namespace gpuscaler::sim
