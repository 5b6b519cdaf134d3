// Deferrable work (classes[].deadline, the pod annotation
// gpuscaler.io/deadline): work that must finish by a deadline rather than
// start at once may wait for spot capacity.
//
// The rule is Can't Be Late's safety net over Uniform Progress: a pending
// unit with a deadline is held for spot (the planner may place it on spot
// nodes, existing or new, but launches no on-demand capacity for it) while
//   slack = deadline - now - remaining work - restart allowance
// is above kDeadlineSafetyMargin plus the work one spot interruption may
// lose (SpotLossAllowance), where the remaining work is the unit's
// expected_runtime (what is left of it when it was interrupted) and the
// restart allowance is the longest lead time (launch to GPUs allocatable)
// of an on-demand offering the unit fits plus its restart_cost. A unit
// started on spot while held can thus be interrupted once and still reach
// on-demand in time. Once the slack is at or below that the unit is planned
// as any other: on on-demand when spot cannot take it. Work that may not run on spot
// (not interruptible, pinned to on-demand, its class's max_spot_share 0,
// or unknown class) is never held: waiting would only delay it.
//
// Pure functions of the snapshot and the policy, like the planner: a replay
// of a decision holds the same units for the same reasons.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

// Slack kept in reserve when a held unit switches to on-demand: covers the
// control loop's replanning cadence and lead times longer than learned.
inline constexpr Seconds kDeadlineSafetyMargin{1800};

struct HeldUnit {
  size_t pending_index = 0;  // into Snapshot::pending
  Seconds slack{0};          // as defined above, at the snapshot's time
  // When the slack reaches the margin: from then on the unit may go to
  // on-demand.
  WallTime on_demand_from{};
};

// The pending units held for spot at the snapshot's time, in pending order.
std::vector<HeldUnit> FindDeadlineHolds(const Snapshot& snapshot, const Policy& policy);

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
