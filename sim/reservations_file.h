// A simulator reservations file: the reservations a replay's cloud holds
// (docs/simulator.md, "Reserved capacity"). YAML or JSON:
//
//   reservations:
//     - id: cr-philly-p3          # what pools[].reservations selects
//       instance_type: p3.16xlarge
//       zone: us-east-1a
//       count: 16
//       start: 0h                 # from the replay's start; default 0h
//       end: 30d                  # from the replay's start; default: never
//       kind: default             # or capacity-block
//       usd_per_hour: 24.48       # per slot; default: the catalog's on-demand price
//       upfront_usd: 0            # capacity-block: the whole fee (then the slot's
//                                 #   hourly cost is the fee over count x hours)
//       tags: {team: research}
//
// Problems are reported with the file, line and field.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/reservation.h"
#include "gpuscaler/status.h"

namespace gpuscaler::sim {

// The reservations of `file`, their times placed from `start`; a type or
// zone the catalog lacks is a problem.
Result<std::vector<Reservation>> ReadReservationsFile(const std::string& file, WallTime start, const Catalog& catalog);

}  // namespace gpuscaler::sim
