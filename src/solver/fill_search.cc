// The fill orders search: the free room of existing nodes filled in
// several group orders (and, on the smallest inputs, with share-limited
// groups kept off spot), each followed by the scale-up; the best plan wins.
#include "planner_impl.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

namespace {
// The extra search of the smallest inputs (at most kSearchUnits pending
// units): every fill order of at most kPermutedGroups groups that existing
// nodes can hold (else each one first), and every subset of at most
// kSpotSubsetGroups groups on spot kept off it (else each one alone).
// A try costs about (options x pending units): the extra tries together
// cost at most kSearchWork of that, and at least kMinSearchTries are made.
constexpr int kSearchUnits = 100;
constexpr size_t kPermutedGroups = 5;
constexpr size_t kSpotSubsetGroups = 3;
constexpr double kSearchWork = 100000;
constexpr int kMinSearchTries = 4;

// Equal element by element, doubles by their bits: the same input, not
// merely an equal one.
template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <typename T>
bool SameBitsNested(const std::vector<std::vector<T>>& a, const std::vector<std::vector<T>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!SameBits(a[i], b[i])) return false;
  return true;
}

// Whether `a` and `b` are the same input to ScaleUp: every field of State
// (a start state has no bins yet).
bool SameStart(const State& a, const State& b) {
  return a.bins.empty() && b.bins.empty() && SameBits(a.rem, b.rem) && SameBits(a.allow.spot, b.allow.spot) &&
         SameBitsNested(a.allow.zone, b.allow.zone) && SameBitsNested(a.allow.spot_pool, b.allow.spot_pool) &&
         SameBits(a.allow.team_usd, b.allow.team_usd) && SameBits(a.allow.no_spot, b.allow.no_spot) &&
         SameBits(a.pool_count, b.pool_count) && SameBits(a.pool_cost, b.pool_cost) &&
         SameBits(a.reserved_added, b.reserved_added) &&
         std::memcmp(&a.cost, &b.cost, sizeof a.cost) == 0 && a.added == b.added &&
         SameBits(a.blocked, b.blocked) && SameBits(a.team_blocked, b.team_blocked) &&
         SameBits(a.budget_cut, b.budget_cut) && SameBits(a.cut_by_team, b.cut_by_team);
}

}  // namespace

std::optional<FillTry> Planner::TryFill(const State& base, const std::vector<int>& order,
                                        const std::vector<char>& no_spot, bool repair, FillMemo& memo) {
  BuildExisting();
  FillTry t;
  t.order = order;
  State start = base;
  start.allow.no_spot = no_spot;
  PlaceOnExisting(start, order);
  std::vector<int> key(start.rem.begin(), start.rem.end());
  key.insert(key.end(), no_spot.begin(), no_spot.end());
  for (int bi : existing_order_) {
    key.push_back(-1);
    for (auto [g, k] : existing_[bi].content) {
      key.push_back(g);
      key.push_back(k);
    }
  }
  if (!memo.filled.insert(std::move(key)).second) return std::nullopt;
  ++memo.planned;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].has_static_reason) start.rem[g] = 0;  // nothing new can hold them; reported as unplaced
  // ScaleUp reads nothing but its start state and the planner's index:
  // fills that leave the same units and allowances (other nodes' room
  // taken alike) share one scale-up.
  auto known = std::find_if(memo.scaled.begin(), memo.scaled.end(),
                            [&](const auto& s) { return SameStart(s.first, start); });
  if (known != memo.scaled.end()) {
    t.st = known->second;
  } else {
    t.st = ScaleUp(start);
    memo.scaled.emplace_back(std::move(start), t.st);
  }
  if (repair) UseFreeRoom(t.st);
  t.unplaced = UnplacedByPriority(t.st);
  t.cost = TotalCost(t.st);
  for (const Bin& b : existing_) t.cost += b.risk;
  SaveFilled(t.filled);
  return t;
}

void Planner::IndexExistingRoom() {
  existing_for_group_.assign(groups_.size(), {});
  existing_room_for_group_.assign(groups_.size(), {});
  std::vector<char> fillable(existing_.size(), 0);
  for (size_t g = 0; g < groups_.size(); ++g)
    for (int bi : existing_order_) {
      if (!MayUseExisting(groups_[g], bi)) continue;
      existing_for_group_[g].push_back(bi);
      if (NoRoomForOne(existing_initial_[bi], groups_[g].shape)) continue;
      existing_room_for_group_[g].push_back(bi);
      fillable[bi] = 1;
    }
  existing_fillable_.clear();
  for (size_t bi = 0; bi < fillable.size(); ++bi)
    if (fillable[bi]) existing_fillable_.push_back(int(bi));
}

void Planner::SaveFilled(std::vector<std::pair<int, Bin>>& out) const {
  size_t k = 0;
  for (int bi : existing_fillable_) {
    if (existing_[bi].content.empty()) continue;
    if (k == out.size()) out.emplace_back();
    out[k].first = bi;
    out[k].second = existing_[bi];  // assigned: reuses the storage of an earlier save
    ++k;
  }
  out.resize(k);
}

void Planner::RestoreFilled(const std::vector<std::pair<int, Bin>>& saved) {
#ifndef NDEBUG
  for (size_t bi = 0; bi < existing_.size(); ++bi) {
    const Bin& b = existing_[bi];
    const Bin& initial = existing_initial_[bi];
    assert(!b.content.empty() || (b.free_whole == initial.free_whole && b.free_cpu == initial.free_cpu &&
                                  b.free_mem == initial.free_mem && b.parts.size() == initial.parts.size()));
    assert(b.content.empty() ||
           std::binary_search(existing_fillable_.begin(), existing_fillable_.end(), int(bi)));
  }
#endif
  for (int bi : existing_fillable_)
    if (!existing_[bi].content.empty()) existing_[bi] = existing_initial_[bi];
  for (const auto& [bi, b] : saved) existing_[bi] = b;
}

State Planner::FillAndScaleUp(const State& base) {
  // Each try fills the free room of existing nodes in one order, then plans
  // new nodes for the rest. A plan wins by leaving less work unplaced
  // (higher priorities first), then by its expected cost: new nodes plus the
  // risk of what the free room took.
  int pending = 0;
  for (int r : base.rem) pending += r;
  const bool small = pending <= opts_.multi_start_max_units;
  const bool search = small && pending <= kSearchUnits && opts_.local_search;
  const int search_tries =
      search ? std::max(kMinSearchTries, int(kSearchWork / (double(options_.size()) * std::max(1, pending))))
             : 0;
  // Tries whose free room ended up filled the same way (and with the same
  // groups kept off spot) plan the same new nodes: each is planned once.
  FillMemo memo;
  const int& planned = memo.planned;  // tries planned (not answered from memo.filled)
  int extra_tries = 0;                // of those, the extra search's
  auto attempt = [&](const std::vector<int>& order, const std::vector<char>& no_spot = {}) {
    return TryFill(base, order, no_spot, small && opts_.local_search, memo);
  };
  auto better = [](const FillTry& a, const FillTry& b) {
    // Fewer unplaced at the highest priority where they differ.
    for (size_t i = 0; i < a.unplaced.size() || i < b.unplaced.size(); i += 2) {
      if (i >= a.unplaced.size()) return true;
      if (i >= b.unplaced.size()) return false;
      if (a.unplaced[i] != b.unplaced[i]) return a.unplaced[i] < b.unplaced[i];
      if (a.unplaced[i + 1] != b.unplaced[i + 1]) return a.unplaced[i + 1] < b.unplaced[i + 1];
    }
    return a.cost < b.cost - 1e-9;
  };
  auto keep_better = [&](std::optional<FillTry>&& t, FillTry& best) {
    if (t && better(*t, best)) best = std::move(*t);
  };
  std::vector<double> lb(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) lb[g] = groups_[g].lb;
  FillTry best = *attempt(ExistingFillOrder(lb));
  // Other orders can only differ where some existing node had room left.
  bool free_room = !best.filled.empty();  // the other nodes are as built
  for (int bi : existing_order_) {
    const Bin& b = existing_initial_[bi];
    free_room = free_room || b.free_whole > 0 || b.free_cpu > 0;
  }
  if (free_room) {
    std::vector<std::vector<int>> orders;
    // Work left unplaced by a limit (budget, max nodes, spot share) is
    // where priority decides who keeps the free room.
    const bool limited = Unplaced(best.st) > 0;
    if (limited) orders.push_back(PriorityFillOrder());
    if (small && groups_.size() > 1) {
      orders.push_back(ExistingFillOrder(RealizedUnitValue(best.st)));
      orders.push_back(ExistingFillOrder(lb, true));
      if (!limited) orders.push_back(PriorityFillOrder());
      // Which group takes which room is a choice no single ranking makes
      // well (a unit with no pin can take the only room a pinned one has,
      // a CPU-only unit's memory can be what a GPU unit lacks). Only the
      // order of the groups that some existing node can hold matters: few
      // of them on few units get every order, more get each one first.
      const std::vector<int> scarce = ExistingFillOrder(lb);
      std::vector<int> fillable, rest;
      for (int g : scarce) {
        const bool may = !existing_for_group_[g].empty();
        (may && base.rem[g] > 0 && !groups_[g].has_static_reason ? fillable : rest).push_back(g);
      }
      auto with_rest = [&](std::vector<int> order) {
        order.insert(order.end(), rest.begin(), rest.end());
        return order;
      };
      std::vector<std::vector<int>> more;
      if (!search) {
        // the orders above only
      } else if (fillable.size() <= kPermutedGroups) {
        std::vector<int> perm = fillable;
        std::sort(perm.begin(), perm.end());
        do more.push_back(with_rest(perm));
        while (std::next_permutation(perm.begin(), perm.end()));
      } else {
        for (size_t i = 1; i < fillable.size(); ++i) {
          std::vector<int> order = fillable;
          std::rotate(order.begin(), order.begin() + long(i), order.begin() + long(i) + 1);
          more.push_back(with_rest(std::move(order)));
        }
      }
      for (const auto& order : orders) keep_better(attempt(order), best);
      // Three quarters of the extra tries at most; the rest for the spot share.
      const int first = planned;
      for (size_t i = 0; i < more.size() && 4 * (planned - first) < 3 * search_tries; ++i)
        keep_better(attempt(more[i]), best);
      extra_tries = planned - first;
      orders.clear();
    }
    for (const auto& order : orders) keep_better(attempt(order), best);
  }
  // A class's spot share goes to its groups in the order the scale-up's
  // bins come, not to the group that saves most on spot (a whole node's
  // worth of share may be missing where a few GPUs are left): also try
  // keeping subsets of share-limited groups now on spot off it, so the
  // share is left to the others.
  if (search) {
    std::vector<char> on_spot(groups_.size(), 0);
    for (const auto& [bi, b] : best.filled)
      if (b.spot)
        for (auto [g, t] : b.content) on_spot[g] = 1;
    for (const Bin& b : best.st.bins)
      if (b.spot)
        for (auto [g, t] : b.content) on_spot[g] = 1;
    std::vector<int> limited;
    for (size_t g = 0; g < groups_.size(); ++g)
      if (on_spot[g] && best.st.allow.spot[groups_[g].cls] < kInf) limited.push_back(int(g));
    const std::vector<int> order = best.order;
    const size_t n = limited.size();
    const bool subsets = n <= kSpotSubsetGroups;
    const int first = planned;
    for (size_t m = 1;
         n > 0 && m < (subsets ? size_t(1) << n : n + 1) && extra_tries + planned - first < search_tries;
         ++m) {
      std::vector<char> no_spot(groups_.size(), 0);
      for (size_t k = 0; k < n; ++k) no_spot[limited[k]] = subsets ? (m >> k) & 1 : k + 1 == m;
      // Kept only when it places everything: what it leaves unplaced would
      // be classified (Classify) as if those groups could not use spot.
      std::optional<FillTry> t = attempt(order, no_spot);
      if (t && Unplaced(t->st) == 0) keep_better(std::move(t), best);
    }
  }
  RestoreFilled(best.filled);
  best.st.allow.no_spot.clear();  // a restriction of the search, not of later passes
  return std::move(best.st);
}

}  // namespace gpuscaler::solver_detail
