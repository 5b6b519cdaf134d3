#include "gpuscaler/model/reservation.h"

namespace gpuscaler {

std::string_view ToString(ReservationKind kind) {
  return kind == ReservationKind::kCapacityBlock ? "capacity-block" : "default";
}

std::optional<ReservationKind> ParseReservationKind(std::string_view text) {
  if (text == "default") return ReservationKind::kDefault;
  if (text == "capacity-block") return ReservationKind::kCapacityBlock;
  return std::nullopt;
}

Offering ReservedOffering(const Reservation& reservation, const Offering* on_demand) {
  Offering o;
  if (on_demand != nullptr) o = *on_demand;
  o.instance_type = reservation.instance_type;
  o.region = reservation.region;
  o.zone = reservation.zone;
  o.capacity_type = CapacityType::kReserved;
  o.reservation_id = reservation.id;
  // An ODCR is billed at the type's on-demand rate: a reservation that
  // states no cost of its own costs that.
  if (reservation.usd_per_hour > 0 || on_demand == nullptr) o.usd_per_hour = reservation.usd_per_hour;
  if (on_demand == nullptr) o.on_demand_usd_per_hour = reservation.usd_per_hour;
  o.interruptions_per_hour = 0;
  o.co_reclaim_share = 0;
  o.available = true;
  return o;
}

bool Reservation::OpenAt(WallTime t) const {
  if (t < start) return false;
  if (!end) return true;
  return t < TakeBackAt().value_or(*end);
}

std::optional<WallTime> Reservation::TakeBackAt() const {
  if (kind != ReservationKind::kCapacityBlock || !end) return std::nullopt;
  return *end - kBlockEndNotice;
}

std::optional<WallTime> Reservation::RetireAt(Seconds launch_latency, Seconds drain_timeout) const {
  const std::optional<WallTime> take_back = TakeBackAt();
  if (!take_back) return std::nullopt;
  return *take_back - launch_latency - drain_timeout;
}

}  // namespace gpuscaler
