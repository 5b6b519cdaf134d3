// What the controller learns that no history in the audit store rebuilds,
// as one JSON document (AuditStore::SaveLearnedState): the next leader, or
// the same replica after a restart, starts where this one was instead of
// from the catalog's priors.
//
// The document (version 1; times in Unix seconds):
//   {"version": 1,
//    "warm_up_s": {"<family>": seconds, ...},
//    "capacity_errors": {"<offering key>": {"streak": n, "until": t}, ...},
//    "reclaims": {"<pool key>": {"notices": [t, ...], "pool_nodes": n, "waves": n,
//                                "wave_at": t, "until": t}, ...},
//    "spot_paused_until": {"<class>": t, ...},
//    "lost_work": {"as_of": t, "classes": {"<class>": {"lost_gpu_hours": x, "gpu_hours": x}}},
//    "spot_floor": {"as_of": t, "classes": {"<class>": {"on_demand_gpu_hours": x,
//                                                       "gpu_hours": x, "weight_hours": x}}}}
// A restored account decays over the time it was not watched and counts
// no work for it. Rebuilt from history instead, and so not in the document:
// the learned interruption rates, the month's spend and the disruption
// window's removals (ClusterState::Restore).
#pragma once

#include <string>

#include "gpuscaler/controller/availability.h"
#include "gpuscaler/controller/fleet_learners.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

struct LearnedStateCodec {
  // The document, without spaces. `accounts`: with lost_work and
  // spot_floor (they drift every tick; the rest moves only on events).
  static std::string Save(const FleetLearners& learners, const OfferingAvailability& availability,
                          bool accounts = true);
  // Replaces what the document holds in `learners` and `availability`,
  // all or nothing: a document of another version or shape is
  // kInvalidInput naming the field, and changes nothing.
  static Status Restore(const std::string& document, FleetLearners& learners, OfferingAvailability& availability);
};

}  // namespace gpuscaler
