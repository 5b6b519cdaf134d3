// Where consolidation may move running work: the allowances a move takes
// or gives back, and a new node filled with moved units.
#include "planner_impl.h"

#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

bool Planner::MoveAllowance(const DemandUnit& u, int cls, const Bin& from, const Bin& to, Allowances& a) const {
  const double w = GpuShare(u);
  if (w <= 0) return true;
  const bool onto_spot = to.spot && !from.spot;
  const bool zone_change = classes_[cls].zone_limited && from.zone != to.zone;
  const auto team_it = team_index_.find(TeamOf(u, policy_));
  const int team = team_it == team_index_.end() ? -1 : team_it->second;
  const double team_more = team >= 0 && a.team_usd[team] < kInf ? w * (PricePerGpu(to) - PricePerGpu(from)) : 0;
  if (onto_spot && a.spot[cls] < w - kEps) return false;
  if (zone_change && a.zone[cls][to.zone] < w - kEps) return false;
  if (team_more > 0 && a.team_usd[team] < team_more - kEps) return false;
  const int from_pool = classes_[cls].pool_limited ? SpotPoolOf(from) : -1;
  const int to_pool = classes_[cls].pool_limited ? SpotPoolOf(to) : -1;
  if (to_pool >= 0 && to_pool != from_pool && a.spot_pool[cls][to_pool] < w - kEps) return false;
  if (from_pool != to_pool) {
    if (from_pool >= 0) a.spot_pool[cls][from_pool] += w;
    if (to_pool >= 0) a.spot_pool[cls][to_pool] -= w;
  }
  if (a.spot[cls] < kInf && from.spot != to.spot) a.spot[cls] += from.spot ? w : -w;
  if (zone_change) {
    a.zone[cls][from.zone] += w;
    a.zone[cls][to.zone] -= w;
  }
  if (team >= 0) a.team_usd[team] -= team_more;
  return true;
}

bool Planner::FillNewNode(Bin& bin, int o, Allowances& allow, const std::vector<std::pair<int, int>>& units,
                          double* risk) const {
  const Option& op = options_[o];
  const Offering& off = snap_.offerings[op.offering];
  InitBin(bin, o);
  for (const auto& [node, k] : units) {
    const DemandUnit& u = snap_.nodes[node].running[k];
    const int cls = running_class_[node][k];
    int mig = -1;
    if (!UnitAllowed(u, cls, op.pool, off, op.type, op.zone, &mig) || Take(bin, ShapeOf(u), mig, 1) != 1 ||
        !MoveAllowance(u, cls, existing_[node], bin, allow))
      return false;
    *risk += ExpectedInterruptionUsdPerHour(u, off, snap_.instance_types[op.type], op.wait_h);
  }
  return true;
}

}  // namespace gpuscaler::solver_detail
