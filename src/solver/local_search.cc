#include "planner_impl.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

bool Planner::Refill(Bin& b, int option, const std::vector<std::pair<int, int>>& content) const {
  for (auto [g, t] : content)
    if (!groups_[g].cand_mask[option]) return false;  // before the bin is touched: the cheap refusal
  InitBin(b, option);
  for (auto [g, t] : content) {
    const Group& grp = groups_[g];
    if (Take(b, grp.shape, grp.mig_by_type[b.type], t) != t) return false;
    b.content.emplace_back(g, t);
    b.risk += t * Risk(grp, b);
  }
  return true;
}

double Planner::TotalCost(const State& st) const {
  double c = 0;
  for (const Bin& b : st.bins) c += b.mult * BinCost(b);
  return c;
}

int Planner::Unplaced(const State& st) const {
  int n = 0;
  for (int r : st.rem) n += r;
  return n;
}

void Planner::LocalSearch(State& st, bool thorough) const {
  Allowances allow;  // try_move's scratch: assigned per move tried, its storage reused
  State saved;       // a try's start: assigned per try, swapped back to undo it
  // Applies `content` x `mult` moving from (old option) to `option`: checks
  // pool max, budgets and allowances; updates the state when it fits.
  auto try_move = [&](Bin& from, int option, const Bin& candidate) -> bool {
    const Option& no = options_[option];
    const Option& oo = options_[from.option];
    const int m = from.mult;
    allow = st.allow;
    for (auto [g, t] : from.content) Consume(groups_[g], from, -double(t) * m, allow);
    for (auto [g, t] : candidate.content) {
      Consume(groups_[g], candidate, double(t) * m, allow);
      if (!Within(groups_[g], candidate, allow, 1e-7)) return false;
    }
    if (no.pool != oo.pool) {
      if (st.pool_count[no.pool] + m > pools_[no.pool].pol.max_nodes) return false;
      const PoolInfo& p = pools_[no.pool];
      if (p.budget_hard && st.pool_cost[no.pool] + no.price * m > p.budget + kEps) return false;
    } else {
      const PoolInfo& p = pools_[no.pool];
      if (p.budget_hard && st.pool_cost[no.pool] + (no.price - oo.price) * m > p.budget + kEps) return false;
    }
    if (global_budget_hard_ && st.cost + (no.price - oo.price) * m > global_budget_ + kEps) return false;
    std::swap(st.allow, allow);
    st.pool_count[oo.pool] -= m;
    st.pool_cost[oo.pool] -= oo.price * m;
    st.pool_count[no.pool] += m;
    st.pool_cost[no.pool] += no.price * m;
    st.cost += (no.price - oo.price) * m;
    from = candidate;  // never `from` itself
    from.mult = m;
    return true;
  };
  // Takes `m` copies of `b` out of the plan (their allowances, pool count
  // and cost given back).
  auto release = [&](Bin& b, int m) {
    const Option& o = options_[b.option];
    for (auto [g, t] : b.content) Consume(groups_[g], b, -double(t) * m, st.allow);
    st.pool_count[o.pool] -= m;
    st.pool_cost[o.pool] -= o.price * m;
    st.cost -= o.price * m;
    st.added -= m;
    b.mult -= m;
  };
  // Adds one node `b` when the pool's max, the budgets and the allowances
  // let it; false leaves `st` partly changed (the caller restores it).
  auto admit = [&](const Bin& b) {
    const Option& o = options_[b.option];
    const PoolInfo& p = pools_[o.pool];
    if (st.pool_count[o.pool] + 1 > p.pol.max_nodes) return false;
    if (p.budget_hard && st.pool_cost[o.pool] + o.price > p.budget + kEps) return false;
    if (global_budget_hard_ && st.cost + o.price > global_budget_ + kEps) return false;
    for (auto [g, t] : b.content) Consume(groups_[g], b, double(t), st.allow);
    for (auto [g, t] : b.content)
      if (!Within(groups_[g], b, st.allow, 1e-7)) return false;
    st.pool_count[o.pool] += 1;
    st.pool_cost[o.pool] += o.price;
    st.cost += o.price;
    st.added += 1;
    return true;
  };

  Bin cand;
  bool improved = true;
  for (int round = 0; round < 4 && improved; ++round) {
    improved = false;
    // 1. Re-type each bin to the cheapest option that holds the same content.
    for (Bin& b : st.bins) {
      const double cur = BinCost(b);
      for (int o : options_by_price_) {
        if (options_[o].price >= cur - 1e-9) break;
        if (o == b.option) continue;
        if (!Refill(cand, o, b.content)) continue;
        if (BinCost(cand) < cur - 1e-9 && try_move(b, o, cand)) {
          improved = true;
          break;
        }
      }
    }
    // 2. Merge two single bins into one cheaper node.
    std::vector<int> singles;
    for (size_t i = 0; i < st.bins.size(); ++i)
      if (st.bins[i].mult == 1) singles.push_back(int(i));
    if (singles.size() > 64) singles.resize(64);
    std::vector<char> gone(st.bins.size(), 0);
    for (size_t a = 0; a < singles.size(); ++a) {
      if (gone[singles[a]]) continue;
      for (size_t c = a + 1; c < singles.size(); ++c) {
        if (gone[singles[c]] || gone[singles[a]]) continue;
        Bin& x = st.bins[singles[a]];
        Bin& y = st.bins[singles[c]];
        const double both = BinCost(x) + BinCost(y);
        std::vector<std::pair<int, int>> content = x.content;
        content.insert(content.end(), y.content.begin(), y.content.end());
        for (int o : options_by_price_) {
          if (options_[o].price >= both - 1e-9) break;
          if (!Refill(cand, o, content)) continue;
          if (BinCost(cand) >= both - 1e-9) continue;
          // Remove y first (frees its pool slot, budget and allowances), then move x.
          const Option& yo = options_[y.option];
          saved = st;
          for (auto [g, t] : y.content) Consume(groups_[g], y, -double(t), st.allow);
          st.pool_count[yo.pool] -= 1;
          st.pool_cost[yo.pool] -= yo.price;
          st.cost -= yo.price;
          st.added -= 1;
          // try_move releases the allowances of x's own content and takes the merged content's.
          Bin xc = st.bins[singles[a]];
          if (try_move(xc, o, cand)) {
            st.bins[singles[a]] = std::move(xc);
            gone[singles[c]] = 1;
            improved = true;
            break;
          }
          std::swap(st, saved);
          break;
        }
      }
    }
    std::vector<Bin> kept;
    for (size_t i = 0; i < st.bins.size(); ++i)
      if (!gone[i]) kept.push_back(std::move(st.bins[i]));
    st.bins = std::move(kept);
    // 2b. Merge one or all copies of a bin with one or all copies of another
    //     into one cheaper node: bulk bins bought for one group each often
    //     share a larger node better (a few pinned units with one copy of a
    //     flexible group's node; all copies of two small bins on one big one).
    if (thorough && st.bins.size() <= 64) {
      std::vector<Bin> merged;
      for (size_t a = 0; a < st.bins.size(); ++a) {
        for (size_t c = a + 1; c < st.bins.size(); ++c) {
          bool done = false;
          for (int all_x = 0; all_x < 2 && !done; ++all_x) {
            for (int all_y = 0; all_y < 2 && !done; ++all_y) {
              const Bin& x = st.bins[a];
              const Bin& y = st.bins[c];
              if (x.mult == 0 || y.mult == 0) continue;
              const int jx = all_x ? x.mult : 1;
              const int jy = all_y ? y.mult : 1;
              if ((all_x && x.mult == 1) || (all_y && y.mult == 1) ||
                  (jx == 1 && jy == 1 && x.mult == 1 && y.mult == 1))
                continue;  // the same pair again, or step 2's
              const double both = jx * BinCost(x) + jy * BinCost(y);
              std::vector<std::pair<int, int>> content;
              for (auto [bin, j] : {std::pair<const Bin*, int>{&x, jx}, {&y, jy}})
                for (auto [g, t] : bin->content) {
                  auto it =
                      std::find_if(content.begin(), content.end(), [g = g](auto e) { return e.first == g; });
                  if (it == content.end())
                    content.emplace_back(g, t * j);
                  else
                    it->second += t * j;
                }
              int64_t gpus = 0, cpu = 0, mem = 0;  // what whole-GPU work needs at least
              for (auto [g, t] : content) {
                gpus += int64_t(groups_[g].shape.gpus) * t;
                cpu += groups_[g].shape.cpu * t;
                mem += groups_[g].shape.mem * t;
              }
              for (int o : options_by_price_) {
                if (options_[o].price >= both - 1e-9) break;
                const InstanceType& type = snap_.instance_types[options_[o].type];
                if (type.gpu_count < gpus || int64_t(type.vcpus) * 1000 < cpu || type.memory_mib < mem)
                  continue;
                bool all = true;
                for (auto [g, t] : content) all = all && groups_[g].cand_mask[o];
                if (!all || !Refill(cand, o, content) || BinCost(cand) >= both - 1e-9) continue;
                saved = st;
                release(st.bins[a], jx);
                release(st.bins[c], jy);
                if (admit(cand)) {
                  merged.push_back(cand);
                  improved = true;
                  done = true;
                } else {
                  std::swap(st, saved);
                }
                break;
              }
            }
          }
        }
      }
      std::erase_if(st.bins, [](const Bin& b) { return b.mult == 0; });
      for (Bin& b : merged) st.bins.push_back(std::move(b));
    }
    // 3. Empty one node (a single bin, or one copy of a bulk bin) into the
    //    free space of other single new bins.
    int tries = 0;
    for (size_t i = 0; i < st.bins.size() && tries < 256; ++i) {
      ++tries;
      saved = st;
      const Bin& victim = st.bins[i];  // not changed (nor moved) by the try
      bool ok = true;
      double added_risk = 0;
      for (auto [g, t] : victim.content) {
        const Group& grp = groups_[g];
        int left = t;
        Consume(grp, victim, -double(t), st.allow);  // released before re-placing
        for (size_t j = 0; j < st.bins.size() && left > 0; ++j) {
          Bin& d = st.bins[j];
          if (j == i || d.mult != 1 || !grp.cand_mask[d.option] || NoRoomForOne(d, grp.shape)) continue;
          const int k = Take(d, grp.shape, grp.mig_by_type[d.type], std::min(left, Limit(grp, d, st.allow)));
          if (k <= 0) continue;
          d.content.emplace_back(g, k);
          const double r = k * Risk(grp, d);
          d.risk += r;
          added_risk += r;
          Consume(grp, d, k, st.allow);
          left -= k;
        }
        if (left > 0) {
          ok = false;
          break;
        }
      }
      if (ok && added_risk < BinCost(victim) - 1e-9) {
        const Option& vo = options_[victim.option];
        st.pool_count[vo.pool] -= 1;
        st.pool_cost[vo.pool] -= vo.price;
        st.cost -= vo.price;
        st.added -= 1;
        if (st.bins[i].mult > 1) {
          st.bins[i].mult -= 1;
        } else {
          st.bins.erase(st.bins.begin() + long(i));
        }
        --i;  // try the same bin (or the one now at i) again
        improved = true;
      } else {
        std::swap(st, saved);
      }
    }
    // 4. A class's spot share is spent where it saves the most: a bin that
    //    would be cheaper on spot but for the share takes it from a bin
    //    that loses less by going to on-demand.
    bool share_limited = false;
    for (double a : st.allow.spot) share_limited = share_limited || a < kInf;
    if (!share_limited || st.bins.size() > 64) continue;
    Bin to_od;
    for (size_t a = 0; a < st.bins.size(); ++a) {
      const double cur = BinCost(st.bins[a]);
      int cheaper = -1;
      for (int o : options_by_price_) {
        if (options_[o].price >= cur - 1e-9) break;
        if (!options_[o].spot || o == st.bins[a].option || !Refill(cand, o, st.bins[a].content)) continue;
        if (BinCost(cand) < cur - 1e-9) {
          cheaper = o;
          break;
        }
      }
      if (cheaper < 0) continue;
      const double gain = (cur - BinCost(cand)) * st.bins[a].mult;
      bool done = false;
      for (size_t b = 0; b < st.bins.size() && !done; ++b) {
        if (b == a || !st.bins[b].spot) continue;
        const double was = BinCost(st.bins[b]);
        for (int o : options_by_price_) {
          if (options_[o].spot || !Refill(to_od, o, st.bins[b].content)) continue;
          // Thorough: the fewest copies of a bulk bin that free enough share.
          const int copies = st.bins[b].mult;
          for (int j = thorough ? 1 : copies; j <= copies && !done; ++j) {
            if ((BinCost(to_od) - was) * j >= gain - 1e-9) break;  // dearer from here on
            saved = st;
            size_t moving = b;
            if (j < copies) {
              Bin part = st.bins[b];
              part.mult = j;
              st.bins[b].mult -= j;
              st.bins.push_back(std::move(part));
              moving = st.bins.size() - 1;
            }
            const Bin spot_cand = cand;
            if (try_move(st.bins[moving], o, to_od) && try_move(st.bins[a], cheaper, spot_cand)) {
              improved = true;
              done = true;
            } else {
              std::swap(st, saved);
            }
          }
          break;
        }
      }
    }
  }
}

}  // namespace gpuscaler::solver_detail
