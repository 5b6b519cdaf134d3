// Private to the planner: the placement its passes search over, and the
// moves they make on it. See planner_impl.h.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "planner_impl.h"

namespace gpuscaler::solver_detail {

class PackingFork;

// A Packing is one placement of the plan's work: a State (new nodes, what the
// allowances have left, pool counts, cost) and the bins of existing nodes
// (Planner::existing_), seen through the planner's rules (shapes, limits,
// risk). Scale-up, its free-room repair, local search and consolidation
// place, take off and move work through it and open and close nodes with its
// bookkeeping, so each move keeps bins, allowances and counts in step. A
// what-if forks the packing first and reverts it when the try does not pay.
// A handle: it refers to the planner and the state, and changes the
// planner's existing bins. Not thread-safe.
class Packing {
 public:
  // `with_existing`: the pass may change existing nodes' bins, so a fork
  // saves them too (local search leaves them alone and forks only the state).
  Packing(Planner& planner, State& state, bool with_existing)
      : planner_(planner), state_(state), with_existing_(with_existing) {}

  State& state() { return state_; }
  const State& state() const { return state_; }
  std::vector<Bin>& existing() { return planner_.existing_; }

  // Places up to `count` units of group `group` on `bin`, as many as its
  // room and the allowances let, and returns how many: each adds
  // `unit_risk` (the group's risk there) to the bin's risk and takes its
  // allowances. No room for one unit: 0, nothing changed.
  int Place(Bin& bin, int group, int count, double unit_risk);
  // The same with the group's risk on `bin` worked out when a unit lands.
  int Place(Bin& bin, int group, int count);
  // Takes every unit of `group` off `bin` (existing node `node`, or a new
  // single bin when node < 0), gives their allowances back and rebuilds the
  // bin from the rest (a subset of what fitted: it fits). Returns how many
  // units came off; subtracts their risk from `delta`.
  int TakeOff(Bin& bin, int node, int group, double& delta);

  // Opens one empty new node of `option` and counts it (pool, cost, nodes
  // added). The reference is valid until the next node is opened or added.
  Bin& OpenNode(int option);
  // Adds `bin` (one new node its caller filled, allowances taken) and counts it.
  void AddNode(Bin bin);
  // Closes one node of new bin `index` whose work went elsewhere (its
  // allowances given back by the moves): one copy fewer, or the bin goes.
  void CloseOneNode(size_t index);
  // Takes `copies` nodes of new bin `bin` out of the plan with their work:
  // their allowances are given back and they leave the counts.
  void Release(Bin& bin, int copies);
  // Existing node `node` leaves the plan: marked removed, it leaves its
  // pool's count and the cost (what moves its work is the caller's).
  void RemoveExistingNode(int node);

  // The existing bins a run of moves changed, each as it was before (in
  // order): what MoveRunningUnit appends to and UndoMoves puts back.
  using UndoLog = std::vector<std::pair<int, Bin>>;
  // Moves running unit `k` of existing node `node` (shape `shape`, class
  // `cls`, MIG profile index `mig`) into the free room of existing node
  // `to`, charging `allow`: true when it fits and the allowances let it, with
  // `to` as it was appended to `undo`; else false, nothing changed.
  // `before` is working storage.
  bool MoveRunningUnit(int node, int k, int cls, const Shape& shape, int mig, int to, Allowances& allow,
                       Bin& before, UndoLog& undo);
  // Puts the bins in `undo` back as they were, last move first, and clears it.
  void UndoMoves(UndoLog& undo);

  // Adds `nodes` of `option` (negative: takes them away) to the pool's
  // count and cost, the plan's cost and the nodes added; the bins are the
  // caller's.
  void CountNodes(int option, int nodes);

  // Saves this packing into `into` (its storage reused from an earlier fork).
  void Fork(PackingFork& into) const;
  // Sets this packing back to `from`, forked from it; `from` is spent.
  void Revert(PackingFork& from);

 private:
  // Place without the risk: the units placed, their content entry and
  // allowances.
  int TakeRoom(Bin& bin, int group, int count);

  Planner& planner_;
  State& state_;
  bool with_existing_;
};

// A saved Packing (Packing::Fork): the state, and with it the existing bins
// that hold pending work (Planner::SaveFilled).
class PackingFork {
 private:
  friend class Packing;
  State state_;
  std::vector<std::pair<int, Bin>> filled_;
};

}  // namespace gpuscaler::solver_detail
