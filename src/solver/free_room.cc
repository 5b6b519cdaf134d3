// The repairs after the constructive pass (Planner::UseFreeRoom): new nodes
// closed into the free room of existing and other new nodes, and pending
// work moved off existing spot nodes into room with less risk.
#include <algorithm>
#include <utility>
#include <vector>

#include "packing.h"

namespace gpuscaler::solver_detail {

namespace {
constexpr double kMinGain = 1e-9;
}  // namespace

// UseFreeRoom's two passes over one packing, with the working storage they
// share (forks and OpenSingleNodes' scratch bin, reused across tries).
class FreeRoomRepair {
 public:
  FreeRoomRepair(Planner& planner, State& state) : planner_(planner), packing_(planner, state, true) {}

  // Closes new nodes (one copy of a bulk bin at a time) by moving their
  // units into free room; where a unit does not fit, a node (existing or
  // new) may make room by moving another group's units elsewhere. Keeps each
  // close that lowers the expected cost.
  void CloseNewNodes();
  // Moves pending work off existing spot nodes to free room with less risk;
  // an existing node with less risk may make that room by moving another
  // group's units elsewhere. Keeps each move that lowers the expected cost.
  void MoveOffRiskySpot();

 private:
  // Puts up to `count` units of `g` in free room, existing nodes first, then
  // new single nodes, skipping new bins `skip_new` and `skip_new2` and
  // existing node `skip_node`, and only where a unit's risk is below
  // `max_risk`. Adds the risk taken to `delta`; returns the units left over.
  int PlaceFree(int g, int count, int skip_new, int skip_new2, int skip_node, double max_risk, double& delta);
  // Makes room for up to `left` units of `g` on existing node `node` (or new
  // bin `new_index` when node < 0) by moving the units of another group `h`
  // out: `g` takes what it can, `h` takes back what still fits, the rest of
  // `h` goes to free room elsewhere (never new bin `victim`) or on new
  // nodes. Returns the units of `g` placed; `ok` false when `h` found no home.
  int EvictFor(int g, int left, int h, int node, int new_index, int victim, double& delta, bool& ok);
  // The groups other than `g` with units on `b`, in content order.
  static std::vector<int> OthersOn(const Bin& b, int g);

  Planner& planner_;
  Packing packing_;
  Bin scratch_;
  PackingFork saved_;   // a try's start
  PackingFork before_;  // an eviction's start, within a try
};

int FreeRoomRepair::PlaceFree(int g, int count, int skip_new, int skip_new2, int skip_node, double max_risk,
                              double& delta) {
  const Group& grp = planner_.groups_[g];
  auto put = [&](Bin& d) {
    const double r = planner_.Risk(grp, d);
    if (r >= max_risk) return;
    const int k = packing_.Place(d, g, count, r);
    if (k <= 0) return;
    delta += k * r;
    count -= k;
  };
  for (int bi : planner_.existing_room_for_group_[g]) {
    if (count == 0) break;
    if (bi != skip_node) put(planner_.existing_[bi]);
  }
  std::vector<Bin>& bins = packing_.state().bins;
  for (size_t j = 0; j < bins.size() && count > 0; ++j)
    if (int(j) != skip_new && int(j) != skip_new2 && bins[j].mult == 1 && grp.cand_mask[bins[j].option])
      put(bins[j]);
  return count;
}

int FreeRoomRepair::EvictFor(int g, int left, int h, int node, int new_index, int victim, double& delta,
                             bool& ok) {
  auto bin = [&]() -> Bin& {
    return node >= 0 ? planner_.existing_[node] : packing_.state().bins[new_index];
  };
  const int moved = packing_.TakeOff(bin(), node, h, delta);
  Bin& b = bin();
  const int k = packing_.Place(b, g, left);
  if (k > 0) delta += k * planner_.Risk(planner_.groups_[g], b);
  const int back = packing_.Place(b, h, moved);
  if (back > 0) delta += back * planner_.Risk(planner_.groups_[h], b);
  int rest = PlaceFree(h, moved - back, victim, new_index, node, kInf, delta);
  if (rest > 0) rest = planner_.OpenSingleNodes(packing_, h, rest, delta, scratch_);
  if (rest > 0) ok = false;
  return k;
}

std::vector<int> FreeRoomRepair::OthersOn(const Bin& b, int g) {
  std::vector<int> others;
  for (auto [h, k] : b.content)
    if (h != g && std::find(others.begin(), others.end(), h) == others.end()) others.push_back(h);
  return others;
}

void FreeRoomRepair::CloseNewNodes() {
  State& st = packing_.state();
  const std::vector<Group>& groups = planner_.groups_;
  int tries = 0;
  for (size_t i = 0; i < st.bins.size() && tries < 256; ++i) {
    if (st.bins[i].content.empty()) continue;
    ++tries;
    packing_.Fork(saved_);
    const Bin victim = st.bins[i];
    double delta = -planner_.BinCost(victim);  // one node of the bin
    std::vector<std::pair<int, int>> content = victim.content;
    std::stable_sort(content.begin(), content.end(), [&](auto a, auto b) {
      return groups[a.first].cands.size() < groups[b.first].cands.size();
    });
    for (auto [g, t] : content) planner_.Consume(groups[g], victim, -double(t), st.allow);
    const int skip = int(i);  // the victim's own room is not free room
    bool ok = true;
    for (auto [g, t] : content) {
      int left = PlaceFree(g, t, skip, -1, -1, kInf, delta);
      for (int bi : planner_.existing_for_group_[g]) {
        if (left == 0 || !ok) break;
        for (int h : OthersOn(planner_.existing_[bi], g)) {
          if (left == 0 || !ok) break;
          left -= EvictFor(g, left, h, bi, -1, skip, delta, ok);
        }
      }
      const size_t new_bins = st.bins.size();
      for (size_t j = 0; j < new_bins && left > 0 && ok; ++j) {
        if (int(j) == skip || st.bins[j].mult != 1 || !groups[g].cand_mask[st.bins[j].option]) continue;
        for (int h : OthersOn(st.bins[j], g)) {
          if (left == 0 || !ok) break;
          left -= EvictFor(g, left, h, -1, int(j), skip, delta, ok);
        }
      }
      if (left > 0) ok = false;
      if (!ok) break;
    }
    if (ok && delta < -kMinGain) {
      packing_.CloseOneNode(i);
      --i;  // the same bin (or the one now at i) again
    } else {
      packing_.Revert(saved_);
    }
  }
}

void FreeRoomRepair::MoveOffRiskySpot() {
  std::vector<Bin>& existing = planner_.existing_;
  const std::vector<Group>& groups = planner_.groups_;
  for (int bi : planner_.existing_order_) {
    if (existing[bi].risk <= kMinGain) continue;
    std::vector<int> risky;
    for (auto [g, t] : existing[bi].content)
      if (planner_.Risk(groups[g], existing[bi]) > kMinGain &&
          std::find(risky.begin(), risky.end(), g) == risky.end())
        risky.push_back(g);
    for (int g : risky) {
      packing_.Fork(saved_);
      double delta = 0;
      const double here = planner_.Risk(groups[g], existing[bi]);
      const int moved = packing_.TakeOff(existing[bi], bi, g, delta);
      int stay = PlaceFree(g, moved, -1, -1, bi, here - kMinGain, delta);
      // Each eviction is kept only when what it costs (the evicted units'
      // new risk or new nodes) is less than the risk it saves.
      for (int ei : planner_.existing_for_group_[g]) {
        if (stay == 0) break;
        if (ei == bi || planner_.Risk(groups[g], existing[ei]) >= here - kMinGain) continue;
        for (int h : OthersOn(existing[ei], g)) {
          if (stay == 0) break;
          packing_.Fork(before_);
          const double delta_before = delta;
          bool ok = true;
          const int k = EvictFor(g, stay, h, ei, -1, -1, delta, ok);
          if (ok && k > 0 && delta - delta_before < k * here - kMinGain) {
            stay -= k;
          } else {
            packing_.Revert(before_);
            delta = delta_before;
          }
        }
      }
      const int back = packing_.Place(existing[bi], g, stay, here);
      if (back > 0) delta += back * here;
      if (back != stay || delta >= -kMinGain) packing_.Revert(saved_);
    }
  }
}

int Planner::OpenSingleNodes(Packing& packing, int g, int count, double& delta, Bin& scratch) const {
  const Group& grp = groups_[g];
  const State& st = packing.state();
  while (count > 0) {
    int best = -1, best_k = 0;
    double best_per_unit = kInf;
    for (int o : grp.cands) {
      // A unit there costs at least the node's price shared by all `count`
      // units, plus its risk: an option that cannot beat the best so far
      // (with a margin far above rounding) is not worked out.
      if (options_[o].price / count + Risk(grp, options_[o]) >= best_per_unit * (1 + 1e-9)) continue;
      if (BlockOf(grp, o, st) != kBlockNone) continue;
      InitBin(scratch, o);
      const int k = Take(scratch, grp.shape, grp.mig_by_type[scratch.type],
                         std::min(count, Limit(grp, scratch, st.allow)));
      if (k <= 0) continue;
      const double per_unit = (scratch.price + k * Risk(grp, scratch)) / k;
      if (per_unit < best_per_unit - 1e-12) {
        best_per_unit = per_unit;
        best = o;
        best_k = k;
      }
    }
    if (best < 0) return count;
    Bin& b = packing.OpenNode(best);
    packing.Place(b, g, best_k);  // what the scratch bin of its option took: it fits
    delta += BinCost(b);
    count -= best_k;
  }
  return 0;
}

void Planner::UseFreeRoom(State& st) {
  FreeRoomRepair repair(*this, st);
  repair.CloseNewNodes();
  repair.MoveOffRiskySpot();
}

}  // namespace gpuscaler::solver_detail
