#include <algorithm>
#include <utility>
#include <vector>

#include "packing.h"

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

// LocalSearch's moves over one packing, each a member, with the working
// storage they share (a candidate bin, scratch allowances and a fork,
// reused across tries).
class LocalSearchPass {
 public:
  LocalSearchPass(Planner& planner, State& state, bool thorough)
      : planner_(planner), packing_(planner, state, /*with_existing=*/false), thorough_(thorough) {}

  // One round of every move; true when one of them lowered the cost.
  bool Round();

 private:
  // 1. Each bin re-typed to the cheapest option that holds the same content.
  bool Retype();
  // 2. Two single bins merged into one cheaper node.
  bool MergeSingles();
  // 2b. One or all copies of a bin merged with one or all copies of another
  //     into one cheaper node: bulk bins bought for one group each often
  //     share a larger node better (a few pinned units with one copy of a
  //     flexible group's node; all copies of two small bins on one big one).
  bool MergeCopies();
  // 3. One node (a single bin, or one copy of a bulk bin) emptied into the
  //    free space of other single new bins.
  bool EmptyNodes();
  // 4. A class's spot share spent where it saves the most: a bin that would
  //    be cheaper on spot but for the share takes it from a bin that loses
  //    less by going to on-demand.
  bool ShiftSpotShare();

  // Moves all copies of `from` to `option` as `candidate` (content x copies):
  // checks pool max, budgets and allowances; changes the packing only when
  // it fits.
  bool MoveBin(Bin& from, int option, const Bin& candidate);
  // Adds one node `b` when the pool's max, the budgets and the allowances
  // let it; false leaves the packing partly changed (the caller reverts it).
  bool Admit(const Bin& b);

  Planner& planner_;
  Packing packing_;
  const bool thorough_;
  Bin cand_;
  Allowances allow_;  // MoveBin's scratch
  PackingFork saved_;
};

bool LocalSearchPass::MoveBin(Bin& from, int option, const Bin& candidate) {
  State& st = packing_.state();
  const Option& no = planner_.options_[option];
  const Option& oo = planner_.options_[from.option];
  const int m = from.mult;
  allow_ = st.allow;
  for (auto [g, t] : from.content) planner_.Consume(planner_.groups_[g], from, -double(t) * m, allow_);
  for (auto [g, t] : candidate.content) {
    planner_.Consume(planner_.groups_[g], candidate, double(t) * m, allow_);
    if (!planner_.Within(planner_.groups_[g], candidate, allow_, 1e-7)) return false;
  }
  const PoolInfo& p = planner_.pools_[no.pool];
  if (no.reservation >= 0 && no.reservation != oo.reservation && planner_.ReservedRoom(no, st) < m) return false;
  if (no.pool != oo.pool) {
    if (st.pool_count[no.pool] + m > p.pol.max_nodes) return false;
    if (p.budget_hard && st.pool_cost[no.pool] + no.price * m > p.budget + kEps) return false;
  } else {
    if (p.budget_hard && st.pool_cost[no.pool] + (no.price - oo.price) * m > p.budget + kEps) return false;
  }
  if (planner_.global_budget_hard_ && st.cost + (no.price - oo.price) * m > planner_.global_budget_ + kEps)
    return false;
  std::swap(st.allow, allow_);
  st.pool_count[oo.pool] -= m;
  st.pool_cost[oo.pool] -= oo.price * m;
  if (oo.reservation >= 0) st.reserved_added[size_t(oo.reservation)] -= m;
  if (no.reservation >= 0) st.reserved_added[size_t(no.reservation)] += m;
  st.pool_count[no.pool] += m;
  st.pool_cost[no.pool] += no.price * m;
  st.cost += (no.price - oo.price) * m;
  from = candidate;  // never `from` itself
  from.mult = m;
  return true;
}

bool LocalSearchPass::Admit(const Bin& b) {
  State& st = packing_.state();
  const Option& o = planner_.options_[b.option];
  const PoolInfo& p = planner_.pools_[o.pool];
  if (st.pool_count[o.pool] + 1 > p.pol.max_nodes) return false;
  if (planner_.ReservedRoom(o, st) < 1) return false;
  if (p.budget_hard && st.pool_cost[o.pool] + o.price > p.budget + kEps) return false;
  if (planner_.global_budget_hard_ && st.cost + o.price > planner_.global_budget_ + kEps) return false;
  for (auto [g, t] : b.content) planner_.Consume(planner_.groups_[g], b, double(t), st.allow);
  for (auto [g, t] : b.content)
    if (!planner_.Within(planner_.groups_[g], b, st.allow, 1e-7)) return false;
  packing_.CountNodes(b.option, 1);
  return true;
}

bool LocalSearchPass::Retype() {
  bool improved = false;
  for (Bin& b : packing_.state().bins) {
    const double cur = planner_.BinCost(b);
    for (int o : planner_.options_by_price_) {
      if (planner_.options_[o].price >= cur - 1e-9) break;
      if (o == b.option) continue;
      if (!planner_.Refill(cand_, o, b.content)) continue;
      if (planner_.BinCost(cand_) < cur - 1e-9 && MoveBin(b, o, cand_)) {
        improved = true;
        break;
      }
    }
  }
  return improved;
}

bool LocalSearchPass::MergeSingles() {
  State& st = packing_.state();
  bool improved = false;
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
      const double both = planner_.BinCost(x) + planner_.BinCost(y);
      std::vector<std::pair<int, int>> content = x.content;
      content.insert(content.end(), y.content.begin(), y.content.end());
      for (int o : planner_.options_by_price_) {
        if (planner_.options_[o].price >= both - 1e-9) break;
        if (!planner_.Refill(cand_, o, content)) continue;
        if (planner_.BinCost(cand_) >= both - 1e-9) continue;
        // Remove y first (frees its pool slot, budget and allowances), then
        // move x: MoveBin gives back the allowances of x's own content and
        // takes the merged content's.
        packing_.Fork(saved_);
        packing_.Release(y, 1);
        Bin xc = st.bins[singles[a]];
        if (MoveBin(xc, o, cand_)) {
          st.bins[singles[a]] = std::move(xc);
          gone[singles[c]] = 1;
          improved = true;
          break;
        }
        packing_.Revert(saved_);
        break;
      }
    }
  }
  std::vector<Bin> kept;
  for (size_t i = 0; i < st.bins.size(); ++i)
    if (!gone[i]) kept.push_back(std::move(st.bins[i]));
  st.bins = std::move(kept);
  return improved;
}

bool LocalSearchPass::MergeCopies() {
  State& st = packing_.state();
  if (!thorough_ || st.bins.size() > 64) return false;
  const std::vector<Group>& groups = planner_.groups_;
  bool improved = false;
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
            continue;  // the same pair again, or MergeSingles'
          const double both = jx * planner_.BinCost(x) + jy * planner_.BinCost(y);
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
            gpus += int64_t(groups[g].shape.gpus) * t;
            cpu += groups[g].shape.cpu * t;
            mem += groups[g].shape.mem * t;
          }
          for (int o : planner_.options_by_price_) {
            if (planner_.options_[o].price >= both - 1e-9) break;
            const InstanceType& type = planner_.snap_.instance_types[planner_.options_[o].type];
            if (type.gpu_count < gpus || int64_t(type.vcpus) * 1000 < cpu || type.memory_mib < mem) continue;
            bool all = true;
            for (auto [g, t] : content) all = all && groups[g].cand_mask[o];
            if (!all || !planner_.Refill(cand_, o, content) || planner_.BinCost(cand_) >= both - 1e-9)
              continue;
            packing_.Fork(saved_);
            packing_.Release(st.bins[a], jx);
            packing_.Release(st.bins[c], jy);
            if (Admit(cand_)) {
              merged.push_back(cand_);
              improved = true;
              done = true;
            } else {
              packing_.Revert(saved_);
            }
            break;
          }
        }
      }
    }
  }
  std::erase_if(st.bins, [](const Bin& b) { return b.mult == 0; });
  for (Bin& b : merged) st.bins.push_back(std::move(b));
  return improved;
}

bool LocalSearchPass::EmptyNodes() {
  State& st = packing_.state();
  bool improved = false;
  int tries = 0;
  for (size_t i = 0; i < st.bins.size() && tries < 256; ++i) {
    ++tries;
    packing_.Fork(saved_);
    const Bin& victim = st.bins[i];  // not changed (nor moved) by the try
    bool ok = true;
    double added_risk = 0;
    for (auto [g, t] : victim.content) {
      const Group& grp = planner_.groups_[g];
      int left = t;
      planner_.Consume(grp, victim, -double(t), st.allow);  // released before re-placing
      for (size_t j = 0; j < st.bins.size() && left > 0; ++j) {
        Bin& d = st.bins[j];
        if (j == i || d.mult != 1 || !grp.cand_mask[d.option]) continue;
        const int k = packing_.Place(d, g, left);
        if (k <= 0) continue;
        added_risk += k * planner_.Risk(grp, d);
        left -= k;
      }
      if (left > 0) {
        ok = false;
        break;
      }
    }
    if (ok && added_risk < planner_.BinCost(victim) - 1e-9) {
      packing_.CloseOneNode(i);
      --i;  // try the same bin (or the one now at i) again
      improved = true;
    } else {
      packing_.Revert(saved_);
    }
  }
  return improved;
}

bool LocalSearchPass::ShiftSpotShare() {
  State& st = packing_.state();
  bool share_limited = false;
  for (double a : st.allow.spot) share_limited = share_limited || a < kInf;
  if (!share_limited || st.bins.size() > 64) return false;
  const std::vector<Option>& options = planner_.options_;
  bool improved = false;
  Bin to_od;
  for (size_t a = 0; a < st.bins.size(); ++a) {
    const double cur = planner_.BinCost(st.bins[a]);
    int cheaper = -1;
    for (int o : planner_.options_by_price_) {
      if (options[o].price >= cur - 1e-9) break;
      if (!options[o].spot || o == st.bins[a].option || !planner_.Refill(cand_, o, st.bins[a].content))
        continue;
      if (planner_.BinCost(cand_) < cur - 1e-9) {
        cheaper = o;
        break;
      }
    }
    if (cheaper < 0) continue;
    const double gain = (cur - planner_.BinCost(cand_)) * st.bins[a].mult;
    bool done = false;
    for (size_t b = 0; b < st.bins.size() && !done; ++b) {
      if (b == a || !st.bins[b].spot) continue;
      const double was = planner_.BinCost(st.bins[b]);
      for (int o : planner_.options_by_price_) {
        if (options[o].spot || !planner_.Refill(to_od, o, st.bins[b].content)) continue;
        // Thorough: the fewest copies of a bulk bin that free enough share.
        const int copies = st.bins[b].mult;
        for (int j = thorough_ ? 1 : copies; j <= copies && !done; ++j) {
          if ((planner_.BinCost(to_od) - was) * j >= gain - 1e-9) break;  // dearer from here on
          packing_.Fork(saved_);
          size_t moving = b;
          if (j < copies) {
            Bin part = st.bins[b];
            part.mult = j;
            st.bins[b].mult -= j;
            st.bins.push_back(std::move(part));
            moving = st.bins.size() - 1;
          }
          const Bin spot_cand = cand_;
          if (MoveBin(st.bins[moving], o, to_od) && MoveBin(st.bins[a], cheaper, spot_cand)) {
            improved = true;
            done = true;
          } else {
            packing_.Revert(saved_);
          }
        }
        break;
      }
    }
  }
  return improved;
}

bool LocalSearchPass::Round() {
  bool improved = Retype();
  improved = MergeSingles() || improved;
  improved = MergeCopies() || improved;
  improved = EmptyNodes() || improved;
  improved = ShiftSpotShare() || improved;
  return improved;
}

void Planner::LocalSearch(State& st, bool thorough) {
  LocalSearchPass pass(*this, st, thorough);
  for (int round = 0; round < 4; ++round)
    if (!pass.Round()) break;
}

}  // namespace gpuscaler::solver_detail
