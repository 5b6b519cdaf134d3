// The scale-up's constructive pass: opens new nodes one option at a time,
// each the option whose fill costs least per unit of work it holds.
#include "planner_impl.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

const GreedyOrder& Planner::GreedyOrderFor(const std::vector<int>& rank) {
  for (const GreedyOrder& known : greedy_orders_)
    if (known.rank == rank) return known;
  GreedyOrder& made = greedy_orders_.emplace_back();
  made.rank = rank;
  std::vector<std::vector<int>>& og = made.groups_by_option;
  std::vector<int>& active = made.active;
  og.resize(options_.size());
  for (size_t o = 0; o < options_.size(); ++o) {
    og[o] = opt_groups_[o];
    std::stable_sort(og[o].begin(), og[o].end(), [&](int a, int b) { return rank[a] < rank[b]; });
    if (!og[o].empty()) active.push_back(int(o));
  }
  // An option never wins when another of the same pool, type and capacity
  // type, open to exactly the same groups, is no dearer and no riskier: drop
  // those up front (zone-spread classes excepted, their zones matter). A
  // reserved option dominates nothing: its slots run out, and the work
  // beyond them needs the options it would have dropped.
  {
    std::vector<int> sorted = active;
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
      const Option& x = options_[a];
      const Option& y = options_[b];
      if (x.pool != y.pool) return x.pool < y.pool;
      if (x.type != y.type) return x.type < y.type;
      return x.spot < y.spot;
    });
    std::vector<char> dominated(options_.size(), 0);
    auto zone_limited = [&](int o) {
      for (int g : og[o])
        if (classes_[groups_[g].cls].zone_limited) return true;
      return false;
    };
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i;
      const Option& head = options_[sorted[i]];
      while (j < sorted.size() && options_[sorted[j]].pool == head.pool && options_[sorted[j]].type == head.type &&
             options_[sorted[j]].spot == head.spot)
        ++j;
      for (size_t a = i; a < j; ++a) {
        const int oa = sorted[a];
        if (zone_limited(oa)) continue;
        const Option& x = options_[oa];
        for (size_t b = i; b < j && !dominated[oa]; ++b) {
          const int ob = sorted[b];
          if (ob == oa || dominated[ob]) continue;
          const Option& y = options_[ob];
          const bool no_worse = y.price <= x.price && y.ih * y.od <= x.ih * x.od;
          const bool better = y.price < x.price || y.ih * y.od < x.ih * x.od || ob < oa;
          if (no_worse && better && og[ob] == og[oa] && y.reservation < 0) dominated[oa] = 1;
        }
      }
      i = j;
    }
    size_t kept = 0;
    for (int o : active)
      if (!dominated[o]) active[kept++] = o;
    active.resize(kept);
  }
  return made;
}

void Planner::Greedy(State& st, const GreedyOrder& order) const {
  const std::vector<std::vector<int>>& og = order.groups_by_option;
  std::vector<int> active = order.active;
  Bin scratch, best;
  // Allowances taken by the bin being evaluated: GPUs per class, USD per team.
  std::vector<double> used(classes_.size(), 0);
  std::vector<double> used_team(teams_.size(), 0);
  std::vector<int> touched;
  while (true) {
    int best_o = -1;
    double best_ratio = kInf;
    size_t kept = 0;
    for (int o : active) {
      bool any = false;
      double value_bound = 0;  // no fill of o holds more than the units left
      for (int g : og[o]) {
        any = any || st.rem[g] > 0;
        value_bound += st.rem[g] * groups_[g].lb;
      }
      if (!any) continue;
      active[kept++] = o;
      const double slot = slot_price_.empty() ? 0.0 : slot_price_[o];
      // Its ratio is at least its price over that bound (risks add to the
      // cost): an option that cannot beat the best so far is not filled.
      if ((options_[o].price + slot) / value_bound >= best_ratio * (1 + 1e-9)) continue;
      if (MaxOpen(options_[o], st) < 1) continue;
      InitBin(scratch, o);
      double cost = scratch.price + slot, value = 0;
      for (int c : touched) used[c] = 0;
      touched.clear();
      std::fill(used_team.begin(), used_team.end(), 0.0);
      for (int g : og[o]) {
        if (st.rem[g] == 0) continue;
        const Group& grp = groups_[g];
        int lim = Limit(grp, scratch, st.allow);
        if (lim != kNoLimit && lim > 0 && grp.gpu_w > 0 && used[grp.cls] > 0)  // CPU-only work: 0 or no limit
          lim = std::max(0, lim - int(std::ceil(used[grp.cls] / grp.gpu_w - 1e-7)));
        if (grp.team >= 0 && used_team[grp.team] > 0) {
          const double charge = grp.gpu_w * PricePerGpu(scratch);
          if (charge > 0)
            lim = std::min<double>(lim, std::max(0.0, std::floor((st.allow.team_usd[grp.team] - used_team[grp.team] + 1e-9) / charge)));
        }
        const int t = Take(scratch, grp.shape, grp.mig_by_type[scratch.type], std::min(st.rem[g], lim));
        if (t <= 0) continue;
        if (grp.gpu_w > 0) {
          if (used[grp.cls] == 0) touched.push_back(grp.cls);
          used[grp.cls] += t * grp.gpu_w;
          if (grp.team >= 0) used_team[grp.team] += t * grp.gpu_w * PricePerGpu(scratch);
        }
        scratch.content.emplace_back(g, t);
        const double r = t * Risk(grp, scratch);
        scratch.risk += r;
        cost += r;
        value += t * grp.lb;
      }
      if (value <= 0) continue;
      const double ratio = cost / value;
      if (ratio < best_ratio - 1e-12) {
        best_ratio = ratio;
        best_o = o;
        std::swap(best, scratch);
      }
    }
    active.resize(kept);
    if (best_o < 0) break;
    const Option& o = options_[best_o];
    int64_t m = MaxOpen(o, st);
    std::map<int, double> per_class;
    std::map<int, double> per_team;
    for (auto [g, t] : best.content) {
      m = std::min<int64_t>(m, st.rem[g] / t);
      per_class[groups_[g].cls] += t * groups_[g].gpu_w;
      if (groups_[g].team >= 0) per_team[groups_[g].team] += t * groups_[g].gpu_w * PricePerGpu(best);
    }
    for (auto [c, need] : per_class) {
      if (need <= 0) continue;
      if (best.spot && st.allow.spot[c] < kInf) m = std::min<int64_t>(m, int64_t(std::floor((st.allow.spot[c] + 1e-7) / need)));
      if (classes_[c].zone_limited) m = std::min<int64_t>(m, int64_t(std::floor((st.allow.zone[c][best.zone] + 1e-7) / need)));
      if (classes_[c].pool_limited) {
        if (const int sp = SpotPoolOf(best); sp >= 0)
          m = std::min<int64_t>(m, int64_t(std::floor((st.allow.spot_pool[c][sp] + 1e-7) / need)));
      }
    }
    for (auto [team, need] : per_team)
      if (need > 0 && st.allow.team_usd[team] < kInf)
        m = std::min<int64_t>(m, int64_t(std::floor((st.allow.team_usd[team] + 1e-9) / need)));
    m = std::max<int64_t>(1, m);
    best.mult = int(m);
    for (auto [g, t] : best.content) {
      st.rem[g] -= int(t * m);
      Consume(groups_[g], best, double(t) * m, st.allow);
    }
    CountNewNodes(st, o, int(m));
    st.bins.push_back(std::move(best));  // best is refilled before it is read again
  }
}

}  // namespace gpuscaler::solver_detail
