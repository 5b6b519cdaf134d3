// Reserved capacity: an EC2 On-Demand Capacity Reservation or Capacity Block
// for ML, or a Compute Engine specific reservation. Values only.
//
// A reservation holds `total_count` instances of one type in one zone, paid
// whether used or not, from `start` to `end`. The cloud counts what is still
// free (`available_count`): a launch that targets the reservation takes one
// slot, a terminated instance gives it back. Reserved capacity is the third
// capacity type of offerings (CapacityType::kReserved, with
// Offering::reservation_id naming the reservation).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// "default": an On-Demand Capacity Reservation (EC2) or a specific
// reservation (Compute Engine), billed per hour at the on-demand rate;
// "capacity-block": an EC2 Capacity Block for ML, paid up front for a fixed
// window at whose end EC2 takes the instances back.
enum class ReservationKind { kDefault, kCapacityBlock };
std::string_view ToString(ReservationKind kind);
std::optional<ReservationKind> ParseReservationKind(std::string_view text);

struct Reservation {
  std::string id;  // "cr-0123456789abcdef0" (EC2), the reservation's name (GCP)
  std::string instance_type;
  std::string region;
  std::string zone;
  ReservationKind kind = ReservationKind::kDefault;
  int total_count = 0;
  int available_count = 0;  // slots no instance holds now
  // When launches into it may start and when it ends (an ODCR without an
  // end date: unset).
  WallTime start{};
  std::optional<WallTime> end;
  std::map<std::string, std::string> tags;
  // What one slot costs per hour whether used or not (an ODCR: the type's
  // on-demand rate; a Capacity Block: its upfront fee spread over the
  // block's hours).
  double usd_per_hour = 0;
  // A Capacity Block's fee for the whole block, paid at purchase; 0 for an
  // ODCR.
  double upfront_usd = 0;

  // Whether instances may be launched into it at `t`: between start and end
  // (EC2 refuses launches on a block before its start and takes the
  // instances back from 30 minutes before its end: see kBlockEndNotice).
  bool OpenAt(WallTime t) const;
  // When the cloud takes its instances back: a Capacity Block's end less
  // kBlockEndNotice. Unset for a reservation without an end, and for an
  // ODCR, whose instances run on as plain on-demand ones when it ends.
  std::optional<WallTime> TakeBackAt() const;
  // When gpuscaler retires the nodes on it so that they are gone before
  // TakeBackAt: early enough for their replacements to come up
  // (`launch_latency`) and for a drain (`drain_timeout`). Unset when
  // TakeBackAt is.
  std::optional<WallTime> RetireAt(Seconds launch_latency, Seconds drain_timeout) const;
  bool operator==(const Reservation&) const = default;
};

// A reserved offering for `reservation`, from its type's on-demand offering
// in the same zone (`on_demand`, null when the catalog has none): its
// launch latency and on-demand price, capacity type reserved, the
// reservation's id, and the slot's cost as its price (the on-demand price
// when the reservation states none: an ODCR is billed at it).
Offering ReservedOffering(const Reservation& reservation, const Offering* on_demand);

// How long before a Capacity Block's end EC2 starts terminating its
// instances.
inline constexpr Seconds kBlockEndNotice{30 * 60};

}  // namespace gpuscaler
