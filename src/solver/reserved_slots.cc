// Planner: reserved capacity (Snapshot::reservations): which reservation
// an offering launches into and how many of its slots a plan may still take.
#include <algorithm>
#include <string>

#include "gpuscaler/model/time.h"
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

bool Planner::FitsBeforeRetirement(const DemandUnit& u, const Offering& off) const {
  const int r = ReservationOf(off);
  if (r < 0) return true;
  const std::optional<WallTime> retire =
      snap_.reservations[size_t(r)].RetireAt(off.launch_latency, policy_.disruption.drain_timeout);
  if (!retire) return true;
  // Work that checkpoints loses at most one interval when its node is
  // retired: it needs room for one. Other work needs room for all of it.
  const Seconds needed = u.checkpoint_interval.count() > 0 ? std::min(u.checkpoint_interval, u.expected_runtime)
                                                           : u.expected_runtime;
  return snap_.time + off.launch_latency + needed <= *retire;
}

std::string Planner::ReservedSlotWhy(const Reservation& r, const Offering& off) const {
  std::string why = "free slots of reservation " + r.id + " (" + std::to_string(r.available_count) + " of " +
                    std::to_string(r.total_count) + " free), paid whether used or not";
  if (const std::optional<WallTime> retire = r.RetireAt(off.launch_latency, policy_.disruption.drain_timeout)) {
    why += "; a Capacity Block: its work ends before its nodes are retired at " + FormatRfc3339(*retire);
  }
  return why;
}

}  // namespace gpuscaler::solver_detail
