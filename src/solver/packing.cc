#include "packing.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

int Packing::TakeRoom(Bin& bin, int group, int count) {
  const Group& g = planner_.groups_[group];
  if (NoRoomForOne(bin, g.shape)) return 0;
  const int placed =
      Take(bin, g.shape, g.mig_by_type[bin.type], std::min(count, planner_.Limit(g, bin, state_.allow)));
  if (placed <= 0) return 0;
  bin.content.emplace_back(group, placed);
  planner_.Consume(g, bin, placed, state_.allow);
  return placed;
}

int Packing::Place(Bin& bin, int group, int count, double unit_risk) {
  const int placed = TakeRoom(bin, group, count);
  if (placed > 0) bin.risk += placed * unit_risk;
  return placed;
}

int Packing::Place(Bin& bin, int group, int count) {
  const int placed = TakeRoom(bin, group, count);
  if (placed > 0) bin.risk += placed * planner_.Risk(planner_.groups_[group], bin);
  return placed;
}

int Packing::TakeOff(Bin& bin, int node, int group, double& delta) {
  std::vector<std::pair<int, int>> kept;
  int removed = 0;
  for (auto [h, t] : bin.content) {
    if (h == group)
      removed += t;
    else
      kept.emplace_back(h, t);
  }
  if (removed == 0) return 0;
  const Group& g = planner_.groups_[group];
  planner_.Consume(g, bin, -double(removed), state_.allow);
  delta -= removed * planner_.Risk(g, bin);
  if (node >= 0) {
    bin = planner_.existing_initial_[node];
    for (auto [h, t] : kept) {
      const Group& other = planner_.groups_[h];
      Take(bin, other.shape, other.mig_by_type[bin.type], t);
      bin.content.emplace_back(h, t);
      bin.risk += t * planner_.Risk(other, bin);
    }
  } else {
    planner_.Refill(bin, bin.option, kept);
  }
  return removed;
}

void Packing::CountNodes(int option, int nodes) {
  CountNewNodes(state_, planner_.options_[option], nodes);
}

Bin& Packing::OpenNode(int option) {
  Bin& bin = state_.bins.emplace_back();
  planner_.InitBin(bin, option);
  CountNodes(option, 1);
  return bin;
}

void Packing::AddNode(Bin bin) {
  const int option = bin.option;
  state_.bins.push_back(std::move(bin));
  CountNodes(option, 1);
}

void Packing::CloseOneNode(size_t index) {
  CountNodes(state_.bins[index].option, -1);
  if (state_.bins[index].mult > 1) {
    state_.bins[index].mult -= 1;
  } else {
    state_.bins.erase(state_.bins.begin() + long(index));
  }
}

void Packing::Release(Bin& bin, int copies) {
  for (auto [g, t] : bin.content)
    planner_.Consume(planner_.groups_[g], bin, -double(t) * copies, state_.allow);
  CountNodes(bin.option, -copies);
  bin.mult -= copies;
}

void Packing::RemoveExistingNode(int node) {
  Bin& bin = planner_.existing_[node];
  bin.removed = true;
  if (bin.pool >= 0) {
    state_.pool_count[bin.pool]--;
    state_.pool_cost[bin.pool] -= bin.price;
  }
  state_.cost -= bin.price;
}

bool Packing::MoveRunningUnit(int node, int k, int cls, const Shape& shape, int mig, int to,
                              Allowances& allow, Bin& before, UndoLog& undo) {
  Bin& bin = planner_.existing_[to];
  before = bin;                                     // assigned: reuses the storage of an earlier try
  if (Take(bin, shape, mig, 1) != 1) return false;  // placed none: unchanged
  if (!planner_.MoveAllowance(planner_.snap_.nodes[node].running[k], cls, planner_.existing_[node], bin,
                              allow)) {
    std::swap(bin, before);
    return false;
  }
  undo.emplace_back(to, std::move(before));
  return true;
}

void Packing::UndoMoves(UndoLog& undo) {
  for (auto it = undo.rbegin(); it != undo.rend(); ++it)
    planner_.existing_[it->first] = std::move(it->second);
  undo.clear();
}

void Packing::Fork(PackingFork& into) const {
  into.state_ = state_;  // assigned: reuses the fork's storage
  if (with_existing_) planner_.SaveFilled(into.filled_);
}

void Packing::Revert(PackingFork& from) {
  std::swap(state_, from.state_);
  if (with_existing_) planner_.RestoreFilled(from.filled_);
}

}  // namespace gpuscaler::solver_detail
