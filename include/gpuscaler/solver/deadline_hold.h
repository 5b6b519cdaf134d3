// Deferrable work (classes[].deadline, the pod annotation
// gpuscaler.io/deadline): work that must finish by a deadline rather than
// start at once, run by Can't Be Late's Uniform Progress.
//
// Each deadline unit has a line from its submission to its deadline: by time
// t, total_work x (t - submitted) / (deadline - submitted) of it should be
// done (DemandUnit's terms). Its lead is the work done less the line (> 0:
// ahead), its slack the time it could still stand idle and finish on
// on-demand:
//   slack = deadline - now - work left - restart allowance
// where the restart allowance is the longest lead time (launch to GPUs
// allocatable, learned per family) of an on-demand offering the unit fits
// plus its restart_cost. The switch margin is that allowance plus the
// policy's tick interval: what one move costs and how late the loop may see
// the need for it. Each plan:
//  - a pending unit ahead of its line, or behind it by less than the
//    margin, is held for spot: placed on spot (free room or new nodes) or
//    left waiting, with no on-demand capacity for it;
//  - a pending unit further behind goes to on-demand, and so do the held
//    units of its class queued before it (Snapshot::pending is in the
//    scheduler's order, which hands them new room first: they are planned
//    as any other work);
//  - a running unit on spot further behind its line than the margin moves
//    to on-demand (a replacement: the new node first, then the old one is
//    drained, the work moving at its checkpoint);
//  - a running unit on on-demand ahead of its line by more than the margin
//    moves to spot when spot is up and the move pays for itself (the node's
//    units all ahead, enough slack left for the move and one interruption);
//  - whatever its line says, a unit whose slack is down to the margin plus
//    the work one spot interruption may lose (SpotLossAllowance) goes to, or
//    stays on, on-demand: one more interruption could cost it its deadline;
//    a pending unit whose work left no longer fits before its deadline (its
//    slack below minus its restart allowance: not even if it started this
//    moment) cannot meet it even there and is reported at once (a note per
//    class), then planned as any other work (on-demand would only make it
//    less late, at on-demand's price); a running one is not moved.
// Held work rides out spot reclaim cooldowns (Snapshot::
// reclaimed_spot_pools): it is ahead of its line, so a reclaim costs it one
// interruption's loss, which its slack holds. Pending gang members are held
// and sent to on-demand alike; a running gang is not moved. Work that may
// not run on spot (not interruptible, pinned to on-demand, its class's
// max_spot_share 0, or unknown class) is planned as any other: waiting would
// only delay it. A unit without line terms (no submission time, or no
// runtime of its own: total_work 0) is held by its slack alone, until it
// is committed, and never moved once it runs: its work left is a guess.
//
// DeadlineStrategy::kHoldPending is the earlier rule, for comparison: a
// pending unit is held while its slack is above 30 minutes plus the spot
// loss allowance, then planned as any other; running work never moves.
//
// Pure functions of the snapshot and the policy, like the planner: a replay
// of a decision holds and moves the same units for the same reasons.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

// kHoldPending's slack kept in reserve when a held unit switches to
// on-demand.
inline constexpr Seconds kDeadlineSafetyMargin{1800};

enum class DeadlineStrategy {
  kUniformProgress,  // the default
  kHoldPending,      // hold pending work by the slack alone; no moves
};

// Where a deadline unit stands at the snapshot's time.
struct DeadlineStanding {
  Seconds left{0};        // work left
  Seconds lead{0};        // work done less the line's; > 0 ahead
  Seconds slack{0};       // as defined above
  Seconds margin{0};      // the switch margin
  Seconds loss{0};        // SpotLossAllowance
  Seconds restart{0};     // RestartAllowance
  bool has_line = false;  // submitted set and before the deadline
  // Slack at or below margin + loss: on-demand only.
  bool Committed() const { return slack <= margin + loss; }
};

// Whether a unit standing `s` may move from on-demand to spot: ahead of its
// line by more than the margin, with slack for the move and one
// interruption.
inline bool MayMoveToSpot(const DeadlineStanding& s) {
  return s.has_line && s.lead > s.margin && s.slack > s.margin + s.loss + s.restart;
}

DeadlineStanding StandingOf(const Snapshot& snapshot, const Policy& policy, const DemandUnit& unit,
                            Seconds restart_allowance);

struct HeldUnit {
  size_t pending_index = 0;  // into Snapshot::pending
  Seconds slack{0};          // as defined above, at the snapshot's time
  // When the slack reaches the margin: from then on the unit may go to
  // on-demand.
  WallTime on_demand_from{};
};

// kHoldPending: the pending units held for spot at the snapshot's time, in
// pending order.
std::vector<HeldUnit> FindDeadlineHolds(const Snapshot& snapshot, const Policy& policy);

// What Uniform Progress says of the pending units: held for spot, sent to
// on-demand (behind the line or committed), and of those the ones that
// cannot meet their deadline at all (indices into Snapshot::pending).
struct PendingDeadlineCalls {
  std::vector<HeldUnit> held;
  std::vector<size_t> on_demand;
  std::vector<size_t> late;  // cannot meet their deadlines: planned as any other work
  // Would be held, but queued before a unit of their class that goes to
  // on-demand: the scheduler gives them that room first, so they are planned
  // as any other work.
  std::vector<size_t> released;
};
PendingDeadlineCalls FindPendingDeadlineCalls(const Snapshot& snapshot, const Policy& policy);

// A node whose work Uniform Progress moves: its units to `to`, those of
// `must_move` pinned there (the rest, moving with them, wherever they fit).
struct DeadlineMove {
  size_t node_index = 0;  // into Snapshot::nodes
  CapacityType to = CapacityType::kOnDemand;
  std::vector<size_t> must_move;  // into the node's running units
  std::string reason;
};
// The moves at the snapshot's time: to on-demand for every spot node with a
// unit behind its line by more than the margin or committed; to spot for
// on-demand nodes whose units are all ahead by more than the margin, with
// slack for the move and one interruption, when a spot offering of the
// pool's that holds them is available and cheaper by more than the move
// costs, at most the pool's disruption allowance of them. Ready nodes only,
// none with a gang member or do-not-disrupt.
std::vector<DeadlineMove> FindDeadlineMoves(const Snapshot& snapshot, const Policy& policy);

// MakePlan (solver/planner.h) with `strategy` for deadline work; MakePlan
// itself runs kUniformProgress.
Plan MakePlanWithDeadlineStrategy(const Snapshot& snapshot, const Policy& policy, DeadlineStrategy strategy);

// The work `unit` has left at `now`: its expected_runtime, less the time
// since progressing_since for a running unit; at least 0.
Seconds WorkLeft(const DemandUnit& unit, WallTime now);

// The restart allowance of `unit`: the longest lead time of an on-demand
// offering in the snapshot with room for its GPUs (any on-demand offering
// when none has), plus its restart_cost.
Seconds RestartAllowance(const Snapshot& snapshot, const DemandUnit& unit);

// The work one spot interruption of `unit` may lose: up to a checkpoint
// interval (the notice window when it checkpoints on notice, all of it
// without checkpoints), at most what is left.
Seconds SpotLossAllowance(const DemandUnit& unit);

// Rewrites what `plan` (made with the held units pinned to spot) says about
// them: each held unit left unplaced gets the reason kDeadlineHold and a
// detail naming its deadline, slack and switch time; one note per class
// counts its held units; plan.replan_by is the earliest switch time.
void RecordDeadlineHolds(const Snapshot& snapshot, const std::vector<HeldUnit>& held, Plan* plan);

}  // namespace gpuscaler
