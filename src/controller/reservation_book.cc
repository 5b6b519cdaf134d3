#include "gpuscaler/controller/reservation_book.h"

#include <algorithm>
#include <utility>

namespace gpuscaler {

bool ReservationBook::Read(CloudProvider& cloud, const Policy& policy, const OfferingBook& book, WallTime now,
                           TickReport* report) {
  const bool wanted = std::any_of(policy.pools.begin(), policy.pools.end(),
                                  [](const NodePoolPolicy& p) { return !p.reservations.empty(); });
  std::vector<Reservation> selected;
  if (wanted) {
    Result<std::vector<Reservation>> listed = cloud.ListReservations();
    if (!listed) {
      report->errors.push_back(listed.error().WithContext("capacity reservations"));
      return false;
    }
    for (Reservation& r : *listed) {
      const bool any = std::any_of(policy.pools.begin(), policy.pools.end(),
                                   [&](const NodePoolPolicy& p) { return p.SelectsReservation(r); });
      if (any) selected.push_back(std::move(r));
    }
    std::sort(selected.begin(), selected.end(),
              [](const Reservation& a, const Reservation& b) { return a.id < b.id; });
  }
  const std::optional<WallTime> last = std::exchange(last_read_, now);
  const bool opened_or_closed = std::any_of(selected.begin(), selected.end(), [&](const Reservation& r) {
    return !last || r.OpenAt(*last) != r.OpenAt(now);
  });
  if (selected == reservations_ && !opened_or_closed) return false;
  reservations_ = std::move(selected);
  offerings_.clear();
  for (const Reservation& r : reservations_) {
    const int od = book.Find(OfferingKey(r.instance_type, r.zone, CapacityType::kOnDemand));
    offerings_.push_back(ReservedOffering(r, od >= 0 ? &book.offerings()[size_t(od)] : nullptr));
  }
  return true;
}

const Offering* ReservationBook::Find(const std::string& key) const {
  for (const Offering& o : offerings_)
    if (o.Key() == key) return &o;
  return nullptr;
}

}  // namespace gpuscaler
