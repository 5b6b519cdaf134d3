// Gangs planned whole (docs/snapshot.md#gangs), around any planning function:
// the pending members of a gang are all placed, in one zone or on one type
// when the gang asks, or none is. Private to the solver.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"

namespace gpuscaler::solver_detail {

using PlanFunction = std::function<Plan(const Snapshot&)>;

// Per pool name, the zone its cluster placement group is in use in: the zone
// of its nodes that run in the group the pool names. A pool's gangs launch
// into the group, which EC2 keeps in one zone while it has instances.
using PlacementGroupZones = std::map<std::string, std::string>;

// The plan `plan` makes for `snapshot`, with gangs whole. Without pending
// gang members it is `plan(snapshot)` itself. Otherwise a gang the first plan
// spreads over zones (or types) is pinned to the zone (type) that holds most
// of its members, or to where its running members are, and planned again; a
// gang still not placed whole is taken out of the pending work, planned
// without, and listed as unplaced with UnplacedReason::kGangIncomplete.
// A gang launched into a pool of `group_zones` in another zone is pinned to
// that pool's zone, as a spread gang is.
// Launches that hold gang members are all_or_nothing, their fallbacks in
// their zone (and of their type, for a gang on one type). At most four calls
// of `plan`. Deterministic.
Plan PlanGangsWhole(const Snapshot& snapshot, const PlacementGroupZones& group_zones, const PlanFunction& plan);

}  // namespace gpuscaler::solver_detail
