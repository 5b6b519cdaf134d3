// Deadline work around the planner's core (solver/deadline_hold.h): what
// the deadline strategy pins pending work to and which running nodes it
// moves, planned in one pass. Private to the solver.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/solver/deadline_hold.h"
#include "gpuscaler/solver/planner.h"
#include "type_index.h"

namespace gpuscaler::solver_detail {

// Whether `unit` may wait for spot at all, so deadline rules apply to it:
// interruptible, not pinned to a capacity type, its class's max_spot_share
// above 0. Pending gang members are held and sent to on-demand alike (one
// terms, one standing); running ones are not moved (FindDeadlineMoves skips
// their nodes).
bool MayWaitForSpot(const DemandUnit& unit, const Policy& policy);
// "1h2m", "-30m".
std::string SignedDuration(Seconds d);

// RestartAllowance per GPU count and restart cost, each computed once: the
// offerings scan is the same for every unit of a shape. Valid while the
// snapshot is.
class RestartAllowances {
 public:
  explicit RestartAllowances(const Snapshot& snapshot) : snapshot_(snapshot) {}
  Seconds Of(const DemandUnit& u);

 private:
  const Snapshot& snapshot_;
  std::map<std::pair<int, int64_t>, Seconds> cache_;
};

// The planner with demand forecasts: forecast units join the pending work
// and what the plan says of them is taken out again (planner.cc).
Plan PlanWithForecasts(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options);

// Pins, in `pinned` (a copy of `snapshot`), the running deadline units with
// a line on on-demand nodes that may not move to spot (MayMoveToSpot) to
// on-demand, so
// that consolidation does not move them where Uniform Progress would not,
// and marks do-not-disrupt the nodes of deadline units whose slack cannot
// pay a restart above their floor: consolidation does not move them at all.
void PinRunningDeadlineWork(const Snapshot& snapshot, const Policy& policy, Snapshot* pinned);

// PlanWithForecasts on a copy of `snapshot` where deadline units are pinned
// as `strategy` says and the work of the nodes it moves is pending again,
// pinned where it moves to; each moved node is then terminated (kReplace
// when its work goes to new nodes, kConsolidate when to free room). A move
// whose work the plan cannot place whole is dropped and the plan made again
// without it (at most three plans). Holds, moves and late units are in the
// plan's unplaced reasons, termination reasons and notes.
Plan PlanWithDeadlines(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options,
                       DeadlineStrategy strategy);

}  // namespace gpuscaler::solver_detail
