// The planner: GPU bin-packing and expected-cost optimisation.
//
// MakePlan is a pure, deterministic function: no I/O, no clock reads, no
// logging, no randomness that is not seeded from its inputs. The same
// snapshot and policy give the same plan, byte for byte, in the daemon, the
// simulator, `gpuscaler explain`, tests and benchmarks. It never fails: work
// that cannot be placed is listed in Plan::unplaced with a reason.
// Thread-safe: it touches nothing but its arguments.
#pragma once

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

Plan MakePlan(const Snapshot& snapshot, const Policy& policy);

}  // namespace gpuscaler
