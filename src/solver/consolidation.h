// Private to the planner: consolidation as a set of move strategies over the
// plan's packing. See planner_impl.h and, for what the strategies do,
// gpuscaler/solver/planner.h (step 4).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "packing.h"

namespace gpuscaler::solver_detail {

// Moves that buy new nodes to repack work, a split or a replacement that
// sends part of a node's work to other nodes' free room, are made only for
// nodes that have run this long: worth it for placements that last (serving
// replicas), not for work that comes and goes within hours (training bursts).
inline constexpr Seconds kLastingNodeAge{6 * 3600};

// Runs the planner on `snapshot` with only `strategies` of consolidation (the
// others skipped), for tests of one strategy alone. With every strategy it
// is MakePlan without forecasts or deadline holds.
Plan PlanWithConsolidationStrategies(const Snapshot& snapshot, const Policy& policy,
                                     ConsolidationStrategies strategies);

// One consolidation pass over the plan's packing (Planner::Consolidate):
// node removals within the disruption policy, each with a termination, the
// placements of the work it moves and a reason, appended to the plan.
// Not thread-safe: it changes the planner's existing bins and pools.
class Consolidation {
 public:
  Consolidation(Planner& planner, State& state, Plan& plan, std::vector<TerminationAction>& terms,
                ConsolidationStrategies strategies);

  // The driver: every enabled strategy, in ConsolidationStrategy's order.
  void Run();

 private:
  // A node that may go: ready, old enough, nothing pending planned on it,
  // disruptible, no blocked class and no gang member on it.
  struct Candidate {
    int node;
    bool empty;
    double gpu_w;
    double price;
  };
  // What a candidate's running work costs where it is: its expected
  // interruption loss per hour, and the one-off cost of moving it (each
  // unit's restart at on-demand value) spread over the horizon.
  struct WorkCost {
    double risk = 0;
    double disruption = 0;
  };
  // A non-empty candidate being tried: its work's cost, the whole GPUs it
  // needs and its units, largest first.
  struct NodeWork {
    int node = -1;
    WorkCost cost;
    int need_whole = 0;
    std::vector<int> order;  // running indices
  };
  // Units of a node moved into other nodes' free room, charged to an
  // allowance: where each went, the receivers as they were (the undo log),
  // the units that fit nowhere and the moved units' expected interruption
  // loss.
  struct FreeRoomMoves {
    std::vector<std::pair<int, int>> dest;  // (running index, bin)
    Packing::UndoLog undo;
    std::vector<std::pair<int, int>> left;  // (node, running index)
    double risk = 0;
  };
  // The cheapest new node that holds some moving units and saves enough:
  // option -1 when none does.
  struct Replacement {
    int option = -1;
    Bin bin;  // its risk: the expected interruption loss of what it holds
    Allowances allow;
    double saves = -kInf;
  };
  // A candidate of the group strategies, with its work's totals.
  struct GroupCandidate {
    int node;
    WorkCost cost;
    double gpus;  // GPU share of its units
    int64_t cpu_milli;
    int64_t mem_mib;
  };

  // The most nodes one new node replaces (the disruption budget permitting).
  static constexpr int kMaxGroupNodes = 8;

  // The strategies. Each commits its move when it pays and says whether it did.
  bool RemoveEmpty(const Candidate& c);
  bool DeleteIntoFreeRoom(const NodeWork& w);
  // Replace and part to free room: the larger saving of the two is made.
  bool ReplaceNode(const NodeWork& w);
  Replacement ReplaceWhole(const NodeWork& w);
  Replacement ReplacePart(const NodeWork& w, FreeRoomMoves& moves);
  // Groups of three or more per pool, the longest prefix that pays.
  void ReplaceGroups();
  // Two nodes' units split onto two new nodes.
  void SplitPairs();
  // Any two remaining candidates of a pool onto one new node.
  void ReplacePairs();

  // The pass's inputs and the shared steps of the strategies.
  void FindCandidates();
  void FindGroupCandidates();
  // Counts an empty candidate past the tick's removals: left for later ticks.
  void CountEmptyLeft(const Candidate& c);
  std::optional<NodeWork> WorkOf(const Candidate& c) const;
  WorkCost CostOfRunningWork(int node) const;
  bool MayReceive(const Bin& b, int bi, const DemandUnit& u, const Shape& s, int cls, int* mig) const;
  bool KnownNoRoom(const DemandUnit& u) const;
  bool AllowancesUnlimited(const DemandUnit& u, int cls, const Allowances& a) const;
  bool PoolOkToRemove(int pool, bool empty, int held_back = 0, int count = 1) const;
  // Whether a replacement may open `nodes` new nodes of option `op` for
  // pool `pool`: the option is the pool's, usable, and its reservation (if
  // any) has that many free slots left in the plan.
  bool MayOpen(const Option& op, int pool, int nodes = 1) const;
  FreeRoomMoves MoveToFreeRoom(int node, const std::vector<int>& order, Allowances& allow, bool stop_at_miss);
  Replacement CheapestReplacement(const NodeWork& w, const std::vector<std::pair<int, int>>& moving,
                                  const Allowances& from, double moved_risk);
  bool ReplaceGroup(const std::vector<const GroupCandidate*>& group, int now);
  void CheapestBySubset(int pool, const std::vector<std::pair<int, int>>& units, double limit,
                        std::vector<double>& cheapest, std::vector<int>& cheapest_option) const;
  bool CommitSplit(const GroupCandidate& a, const GroupCandidate& b,
                   const std::vector<std::pair<int, int>>& units, const int (&parts)[2],
                   const int (&options)[2], double cost, double saves);
  int GroupRoom(int pool) const;
  // Records moved units' placements on existing receivers.
  void PlaceMoved(int node, const std::vector<std::pair<int, int>>& dest);
  void RemoveNode(int node, bool empty);
  void AddReplacement(const Bin& bin);
  void RecountFreeWhole();
  // Puts the receivers of `moves` back as they were; forgets where the units went.
  void Undo(FreeRoomMoves& moves);
  bool AddedMax() const;

  Planner& planner_;
  Packing packing_;
  Plan& plan_;
  std::vector<TerminationAction>& terms_;
  const ConsolidationStrategies strategies_;
  const DisruptionPolicy& disruption_;
  // The hours a consolidation has to pay for itself in: its new nodes'
  // warm-up overlap and the moved work's restart cost are both paid once.
  const double horizon_h_;
  const int max_removed_;
  // A replacement is bought because another offering's price is lower: on
  // prices that cannot be trusted it is not made. Moves into existing free
  // room stay (they save a node's whole price, whatever the spot prices).
  const bool replacements_off_;
  int removed_ = 0;
  int64_t free_whole_total_ = 0;
  std::vector<Candidate> candidates_;
  std::vector<GroupCandidate> group_candidates_;
  Bin group_bin_;               // ReplaceGroup's new node (its storage reused)
  std::vector<int> receivers_;  // accepting existing nodes, in placement order
  // Running units that found no other node during this pass, by their
  // requirements (SameDemand). Receivers only lose room as the pass goes on
  // (moves take it; an undone attempt puts back what it took), so a unit
  // that did not fit for want of room will not fit later in the pass either.
  // Only units whose moves no allowance limits (spot share, zone spread, team
  // cap: a move can give those back) are remembered, and only when their own
  // node had no room for them either (it is a receiver for the next
  // candidate).
  std::unordered_map<size_t, std::vector<const DemandUnit*>> no_room_;
};

// Hours a new node of offering `o` (type index `type`) warms up before its
// GPUs are allocatable: its family's learned warm-up, else the offering's
// launch latency (the catalog's prior).
double WarmUpHours(const Snapshot& snap, int type, const Offering& o);

}  // namespace gpuscaler::solver_detail
