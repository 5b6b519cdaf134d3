// Planner: reserved capacity (Snapshot::reservations): which reservation
// an offering launches into and how many of its slots a plan may still take.
#include <algorithm>

#include "planner_impl.h"

namespace gpuscaler::solver_detail {

int Planner::ReservationOf(const Offering& o) const {
  if (o.capacity_type != CapacityType::kReserved) return -1;
  for (size_t r = 0; r < snap_.reservations.size(); ++r)
    if (snap_.reservations[r].id == o.reservation_id) return int(r);
  return -1;
}

int Planner::ReservedRoom(const NodeOffer& o, const State& st) const {
  if (o.reservation < 0) return kNoLimit;
  return std::max(0, snap_.reservations[size_t(o.reservation)].available_count - st.reserved_added[size_t(o.reservation)]);
}

}  // namespace gpuscaler::solver_detail
