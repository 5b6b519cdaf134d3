// Gangs planned whole (docs/snapshot.md#gangs), around any planning function:
// the pending members of a gang are all placed, in one zone or on one type
// when the gang asks, or none is. Private to the solver.
#pragma once

#include <functional>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"

namespace gpuscaler::solver_detail {

using PlanFunction = std::function<Plan(const Snapshot&)>;

// The plan `plan` makes for `snapshot`, with gangs whole. Without pending
// gang members it is `plan(snapshot)` itself. Otherwise a gang the first plan
// spreads over zones (or types) is pinned to the zone (type) that holds most
// of its members, or to where its running members are, and planned again; a
// gang still not placed whole is taken out of the pending work, planned
// without, and listed as unplaced with UnplacedReason::kGangIncomplete.
// Launches that hold gang members are all_or_nothing, their fallbacks in
// their zone (and of their type, for a gang on one type). At most four calls
// of `plan`. Deterministic.
Plan PlanGangsWhole(const Snapshot& snapshot, const PlanFunction& plan);

}  // namespace gpuscaler::solver_detail
