// The planner's cost model: what a unit's work is worth, and what running it
// on spot is expected to cost in interruptions. Pure functions of a unit, an
// offering, its instance type and (for the replacement wait) a snapshot; they
// depend on nothing else in the solver, so code below or beside the planner
// (cluster state's learners, forecasts, deadline holds) can use them without
// the planner. Thread-safe: no state.
#pragma once

#include <cstdint>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// How long a spot notice comes before the instance is reclaimed (AWS: two
// minutes; GCP's preemption notice is shorter, 30 s, so this errs high).
inline constexpr Seconds kSpotNoticeWindow{120};

// What keeping one more node of `offering` for an hour adds to the bill: its
// price, but for a reserved slot, which is paid whether used or not, a
// token share of the on-demand price (kReservedMarginalShare) so that among
// reserved slots the plan still prefers fewer and smaller nodes.
inline constexpr double kReservedMarginalShare = 1e-6;
double MarginalUsdPerHour(const Offering& offering);

// A spot offering the policy's spot limits rule out (spot.*): priced above
// `max_price_fraction` of its on-demand price (of its own price when that is
// unknown), or interrupted more often than `max_interruptions_per_hour`.
// False for every other capacity type.
bool SpotOverCeiling(const Offering& offering, double max_price_fraction, double max_interruptions_per_hour);

// The share (0..1) of a node of `type` that work of `gpu_share` GPUs and
// `cpu_milli` vCPU (milli) holds: by GPUs for GPU work on a GPU node, else
// by vCPU; 0 on a type with neither.
double ShareOfNode(double gpu_share, int64_t cpu_milli, const InstanceType& type);

// Hours of progress a unit loses per interruption, expected: the work since
// its last checkpoint (half the checkpoint interval, capped by half the
// runtime; half the runtime without checkpoints; at most the notice window
// for a unit that checkpoints on notice).
double LostWorkHoursPerInterruption(const DemandUnit& unit);
// LostWorkHoursPerInterruption plus the unit's restart cost.
double LostHoursPerInterruption(const DemandUnit& unit);

// The on-demand value per hour of `unit` on a node of `type` bought as
// `offering`: its share of the node's on-demand price, by GPUs (by vCPU for
// CPU-only work).
double OnDemandValueUsdPerHour(const DemandUnit& unit, const Offering& offering, const InstanceType& type);

// Hours an interrupted unit waits for replacement capacity before it runs
// again: the learned warm-up (launch to GPUs allocatable) of the type's
// family in `snapshot`, else the offering's launch latency (the catalog's).
double ReplacementWaitHours(const Snapshot& snapshot, const Offering& offering, const InstanceType& type);

// Members of a gang of `size` whose work one reclaim on a member's offering
// is expected to cost, per member: with each reclaim taking a share
// `co_reclaim_share` (Offering::co_reclaim_share) of the spot nodes of the
// domain, a gang on k nodes of it is hit (1 - (1 - share)^k) / share times
// as often as one node: k when reclaims are independent, 1 when the whole
// domain goes at once. 1 for a lone unit (`size` <= 1).
double GangInterruptionReach(int size, double co_reclaim_share);

// Expected hourly cost of interruptions for `unit` on one node of `offering`:
// interruptions_per_hour × (lost hours + `replacement_wait_h`) × on-demand
// value: the work lost, and the hours the unit then stands still waiting for
// a replacement, both valued at what the work costs on on-demand. A gang
// member's node takes the whole gang down with it, so its figure is
// GangInterruptionReach(InterruptionReach(unit), offering.co_reclaim_share)
// times a lone unit's. 0 on on-demand.
double ExpectedInterruptionUsdPerHour(const DemandUnit& unit, const Offering& offering,
                                      const InstanceType& type, double replacement_wait_h);
// The same with the offering's launch latency as the replacement wait (no
// learned warm-up known).
double ExpectedInterruptionUsdPerHour(const DemandUnit& unit, const Offering& offering,
                                      const InstanceType& type);

}  // namespace gpuscaler
