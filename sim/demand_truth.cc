#include "sim/demand_truth.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpuscaler::sim {

DemandCurve::DemandCurve(std::vector<std::pair<WallTime, double>> changes) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Summed in order, then snapped to zero: a class whose jobs all ended is
  // at zero, not at a rounding residue.
  double level = 0;
  for (size_t i = 0; i < changes.size();) {
    const WallTime t = changes[i].first;
    const double before = level;
    for (; i < changes.size() && changes[i].first == t; ++i) level += changes[i].second;
    if (std::abs(level) < 1e-9) level = 0;
    if (level == before) continue;
    times_.push_back(t);
    levels_.push_back(level);
  }
  const size_t n = levels_.size();
  tree_.assign(2 * n, 0.0);
  for (size_t i = 0; i < n; ++i) tree_[n + i] = levels_[i];
  for (size_t i = n; i-- > 1;) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
}

double DemandCurve::RangeMax(size_t first, size_t last) const {
  const size_t n = levels_.size();
  double best = levels_[first];
  for (size_t l = first + n, r = last + n + 1; l < r; l /= 2, r /= 2) {
    if (l & 1) best = std::max(best, tree_[l++]);
    if (r & 1) best = std::max(best, tree_[--r]);
  }
  return best;
}

double DemandCurve::At(WallTime t) const {
  const auto after = std::upper_bound(times_.begin(), times_.end(), t);
  if (after == times_.begin()) return 0;
  return levels_[static_cast<size_t>(after - times_.begin()) - 1];
}

double DemandCurve::PeakWithin(WallTime from, WallTime to) const {
  const double at_from = At(from);
  if (to <= from) return at_from;
  // Steps in (from, to]: the levels from the first change after `from` to
  // the last change at or before `to`.
  const size_t first =
      static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), from) - times_.begin());
  const size_t end = static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), to) - times_.begin());
  if (first >= end) return at_from;
  return std::max(at_from, RangeMax(first, end - 1));
}

TrueDemand::TrueDemand(const Trace& trace, WallTime start, const std::vector<std::string>& classes) {
  std::map<std::string, std::vector<std::pair<WallTime, double>>> changes;
  for (const std::string& c : classes) changes[c];
  for (const TraceJob& job : trace.jobs) {
    const double gpus = GpuShare(job.unit);
    if (gpus <= 0 || job.duration.count() <= 0) continue;
    auto it = changes.find(job.unit.workload_class);
    if (it == changes.end()) {
      if (!classes.empty()) continue;
      it = changes.emplace(job.unit.workload_class, std::vector<std::pair<WallTime, double>>{}).first;
    }
    const WallTime submitted = start + job.submit;
    it->second.emplace_back(submitted, gpus);
    it->second.emplace_back(submitted + job.duration, -gpus);
  }
  for (auto& [name, c] : changes) curves_.emplace(name, DemandCurve(std::move(c)));
}

std::optional<double> TrueDemand::PeakWithin(const std::string& workload_class, WallTime now,
                                             Seconds horizon) const {
  const DemandCurve* curve = Find(workload_class);
  if (curve == nullptr) return std::nullopt;
  return curve->PeakWithin(now, now + horizon);
}

std::string TrueDemand::Description() const {
  return "the trace's true future demand, every job started at its submission";
}

const DemandCurve* TrueDemand::Find(const std::string& workload_class) const {
  auto it = curves_.find(workload_class);
  return it == curves_.end() ? nullptr : &it->second;
}

}  // namespace gpuscaler::sim
