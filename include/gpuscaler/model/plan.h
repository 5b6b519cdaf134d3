// A Plan is the planner's output: what to launch, what to drain and remove,
// where each pending unit goes, what could not be placed and why, and what it
// all costs. Every action carries a reason a person can read. Values only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// Why a unit stayed unplaced.
enum class UnplacedReason {
  kNoOfferingFits,        // no instance type in any allowed pool can hold it
  kBudget,                // placing it would exceed a hard budget cap
  kPoolMax,               // the pools that could hold it are at max_nodes
  kCapacityUnavailable,   // offerings that fit are all marked unavailable
  kSpotShare,             // needs spot but the class's spot share is used up (and no on-demand allowed)
  kZoneSpread,            // zone spread constraint cannot be met
  kMaxNodesPerTick,       // scaling.max_nodes_added_per_tick reached; next tick
  kSpotPriceCeiling,      // only spot fits and every spot offer is above the price ceiling
  kNoPool,                // no pool admits the unit's class/constraints
  kDeadlineHold,          // deferrable: held for spot while its deadline's slack lasts
  kGangIncomplete,        // a gang member: the whole gang cannot be placed at once
};

std::string_view ToString(UnplacedReason r);

struct LaunchAction {
  std::string pool;
  Offering offering;   // chosen offering (price at plan time)
  int count = 0;
  // Next-best offerings for the same units, in order: the actuator falls back
  // to these on capacity errors, keeping the plan's intent.
  std::vector<Offering> fallbacks;
  std::vector<std::string> unit_ids;  // pending units these nodes are for
  // Labels the new nodes carry (instance tags, and node labels where the pool
  // has a node template), beside the pool's own; empty for MakePlan's
  // launches. The simulator's baselines use them for the topology domain
  // of a Karpenter-style capacity split (sim/capacity_spread.h).
  std::map<std::string, std::string> node_labels;
  // The nodes hold members of a gang: the cloud launches all `count` or none
  // (EC2 CreateFleet's MinTargetCapacity, in one zone), and the fallbacks are
  // in the offering's zone only.
  bool all_or_nothing = false;
  // Non-empty: the nodes are woken from the pool's warm capacity (these
  // stopped instances are started, one node each: count == size) instead of
  // launched; the fallbacks are cold launches.
  std::vector<std::string> wake_instance_ids;
  // A refill of the pool's warm capacity: the nodes are launched, left to
  // register and stopped; they take no units.
  bool into_warm = false;
  double usd_per_hour = 0;            // count × price (a reserved slot's: MarginalUsdPerHour)
  double expected_interruption_usd_per_hour = 0;
  std::string reason;
};

enum class TerminationKind {
  kEmpty,        // no work, not needed
  kConsolidate,  // work fits elsewhere
  kReplace,      // replaced by cheaper launches in the same plan
};

std::string_view ToString(TerminationKind k);

struct TerminationAction {
  std::string node_id;
  std::string instance_id;
  std::string pool;
  Offering offering;
  TerminationKind kind = TerminationKind::kEmpty;
  std::vector<std::string> moved_unit_ids;  // running units that must restart elsewhere
  // A stopped node of the pool's warm capacity retired (solver/warm_pool.h):
  // nothing runs on it, so it disrupts nothing and the governor lets it through.
  bool warm = false;
  // An empty running node stopped into its pool's warm capacity instead of
  // terminated (solver/warm_pool.h): a scale-down like any other for the
  // governor, and no refill launch for its place.
  bool park = false;
  double saves_usd_per_hour = 0;
  std::string reason;
};

// The termination of `node` (its ids, pool and offering) of `kind`; the
// caller adds what it saves, why, and the running units it moves.
TerminationAction TerminationOf(const Node& node, TerminationKind kind);

// Where a pending (or moved) unit goes: an existing node, or the n-th node of
// a launch in this plan.
struct Placement {
  std::string unit_id;
  std::string node_id;  // existing node; empty when launch_index is set
  int launch_index = -1;    // into Plan::launches
  int launch_ordinal = -1;  // which of that launch's `count` nodes
};

struct UnplacedUnit {
  std::string unit_id;
  std::string workload_class;
  UnplacedReason reason = UnplacedReason::kNoOfferingFits;
  std::string detail;
};

struct Plan {
  std::vector<LaunchAction> launches;
  std::vector<TerminationAction> terminations;
  std::vector<Placement> placements;
  std::vector<UnplacedUnit> unplaced;
  double cost_before_usd_per_hour = 0;   // nodes that exist now
  double cost_after_usd_per_hour = 0;    // after launches and terminations
  double expected_interruption_usd_per_hour = 0;  // of work on spot, after the plan
  // What the actions do not show: the planner's remarks (a soft budget
  // exceeded, spot paused) and the governor's holds. Part of the summary.
  std::vector<std::string> notes;
  // SummarizePlan (model/json.h) of this plan, as of its last edit: the
  // planner writes it, the control loop rewrites it after governing.
  std::string summary;
  // The planner asks to be called again by then even when nothing else
  // changes (a unit held for spot may go to on-demand from then on). Not
  // part of the plan's JSON: a replay recomputes it from the same input.
  std::optional<WallTime> replan_by;
  // Empty nodes the plan does not need but leaves for later ticks because
  // the tick's max_nodes_removed_per_tick was reached, by pool. Not actions:
  // the governor counts them in the pool's scale-down recommendation, so its
  // stabilization window holds the size the plans need, not the per-tick
  // step. Not part of the plan's JSON: a replay recomputes it.
  std::map<std::string, int> empty_nodes_left_by_pool;
  // Per pool with pools[].warm: how many warm nodes it should keep now
  // (solver/warm_pool.h). Pools with `actuation: asg` are not refilled by
  // the plan: the actuator sets their group's warm pool to this size. Not
  // part of the plan's JSON (the notes say it): a replay recomputes it.
  std::map<std::string, int> warm_targets;
};

}  // namespace gpuscaler
