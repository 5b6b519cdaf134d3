// The simulated parts of the daemon, wired by the CLI (which links the
// simulator; src/daemon does not):
//  - the demo (`gpuscaler run --demo`): the built-in demo scenario's world
//    (virtual clock, simulated cloud, demo workload; sim/world.h) under the
//    live engine, one tick of virtual time per engine tick;
//  - `cloud.provider: simulated`: the simulated cloud on the wall clock.
// Both simulated clouds run as long as a daemon does (ended instances and
// old prices are forgotten after a day).
#pragma once

#include "gpuscaler/daemon/engine.h"

namespace gpuscaler::cli {

daemon::SimulatedWiring MakeSimulatedWiring();

}  // namespace gpuscaler::cli
