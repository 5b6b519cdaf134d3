// The planner: GPU bin-packing and expected-cost optimisation.
//
// MakePlan is a pure, deterministic function: no I/O, no clock reads, no
// logging, no randomness that is not seeded from its inputs. The same
// snapshot and policy give the same plan, byte for byte, in the daemon, the
// simulator, `gpuscaler explain`, tests and benchmarks. It never fails: work
// that cannot be placed is listed in Plan::unplaced with a reason.
// Thread-safe: it touches nothing but its arguments.
//
// What it does, in order:
//  1. Pending units with identical shapes are grouped; each group is placed
//     on free capacity of existing (ready or launching) nodes first. That
//     room goes to the groups whose cheapest other placement costs most per
//     GPU (GPU work before CPU-only work; fewer offerings that hold them on
//     a tie), so units pinned to a GPU model, zone or GPU memory are not
//     pushed onto dear new nodes by flexible work. When a limit leaves work
//     unplaced, the fill by priority is tried too and the plan that leaves
//     less high-priority work unplaced wins. Small inputs try further fill
//     orders (one from the cost each group met on new nodes) and keep the
//     cheapest, then repair: a new node closes when its units fit in free
//     room of existing or other new nodes (moving another group's units to
//     room elsewhere or to a cheaper new node), and pending work leaves an
//     existing spot node for room with less risk.
//  2. The rest go on new nodes, chosen node by node by the lowest expected
//     hourly cost (price + interruption risk of the work on spot) per unit of
//     demand, where a unit's demand is valued at its cheapest possible cost
//     per unit (a lower bound); identical nodes are opened in bulk. A local
//     search then re-types, merges and empties new nodes, and gives a
//     class's spot share to the new nodes where it saves most, while it saves.
//     Several fill orders are tried on small inputs and the cheapest is kept.
//  3. Hard constraints: GPU count/model/memory (UnitFitsType in
//     model/compatibility.h, which the policy loader checks classes with),
//     fractional GPUs (milli) and MIG layouts, vCPU and memory, pool rules
//     and pins, spot only for interruptible work of classes whose spot is
//     not paused (Snapshot::spot_paused_classes after a capacity error,
//     spot_budget_spent_classes after losing more than the class's
//     lost-work budget), per-class spot share and
//     zone spread, pool max nodes, unavailable offerings, spot price and
//     interruption ceilings, nodes added per tick, and hard budget caps
//     (HourlyAllowanceUsd, a pool's cap charged with the pool's own spend;
//     lowest priority stays unplaced with reason budget). Soft caps are
//     noted, not enforced. A pool below min_nodes gets the missing nodes,
//     each in the zone where the pool has the fewest.
//  4. Consolidation within the disruption policy: empty nodes, nodes whose
//     work fits elsewhere, nodes replaceable by a cheaper one (for lasting
//     on-demand nodes, the units other nodes' free room does not take on
//     it, the rest moved there), groups of
//     nodes replaceable by one cheaper node, and two long-running nodes whose
//     work two cheaper new nodes hold; per pool at most
//     max_disrupted_per_interval minus Snapshot::recently_disrupted removals
//     that move work (a larger group is staged: its first nodes now, the rest
//     following into the new node's free room in later plans).
// With no pools in the policy, one implicit pool "default" allows everything.
#pragma once

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/solver/cost_model.h"

namespace gpuscaler {

struct PlannerOptions {
  // Run the local search over new nodes after the constructive pass.
  bool local_search = true;
  // Inputs with at most this many pending units are solved with several
  // fill orders, keeping the cheapest plan.
  int multi_start_max_units = 500;
  // Run consolidation (also gated by policy.disruption.consolidation).
  bool consolidation = true;
};

Plan MakePlan(const Snapshot& snapshot, const Policy& policy);
Plan MakePlan(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options);

}  // namespace gpuscaler
