// SimCloud's reservations: reserved offerings, their slots, and what they
// cost used and unused.
#include <algorithm>

#include "gpuscaler/model/reservation.h"
#include "sim/sim_cloud.h"

namespace gpuscaler::sim {
namespace {

double HoursBetween(WallTime from, WallTime to) {
  return to > from ? static_cast<double>((to - from).count()) / 3600.0 : 0.0;
}

}  // namespace

void SimCloud::AddReservations(WallTime start) {
  first_reserved_ = offerings_.size();
  forgotten_reserved_usd_.assign(config_.reservations.size(), 0.0);
  taken_back_.assign(config_.reservations.size(), 0);
  for (size_t r = 0; r < config_.reservations.size(); ++r) {
    Reservation& res = config_.reservations[r];
    const Offering* on_demand = nullptr;
    for (size_t i = 0; i < first_reserved_ && on_demand == nullptr; ++i) {
      const Offering& o = offerings_[i];
      if (o.instance_type == res.instance_type && o.zone == res.zone && o.capacity_type == CapacityType::kOnDemand)
        on_demand = &o;
    }
    if (res.region.empty() && on_demand != nullptr) res.region = on_demand->region;
    Offering reserved = ReservedOffering(res, on_demand);
    offerings_.push_back(std::move(reserved));
    if (const std::optional<WallTime> take_back = res.TakeBackAt()) {
      Push(std::max(start, *take_back), EventKind::kBlockEnd, offerings_.size() - 1);
    }
  }
}

Seconds SimCloud::MinBilled(size_t offering) const {
  return ReservationOf(offering) >= 0 ? Seconds(0) : config_.min_billed;
}

Result<std::vector<Reservation>> SimCloud::ListReservations() {
  const WallTime now = clock_.WallNow();
  std::vector<Reservation> out;
  for (size_t r = 0; r < config_.reservations.size(); ++r) {
    const Reservation& res = config_.reservations[r];
    if (res.end && now >= *res.end) continue;
    out.push_back(res);
    out.back().available_count = std::max(0, res.total_count - ReservedInUse(r));
  }
  std::sort(out.begin(), out.end(), [](const Reservation& a, const Reservation& b) { return a.id < b.id; });
  return out;
}

void SimCloud::TakeBack(size_t index, WallTime at) {
  const SimInstance* s = Find(index);
  if (s == nullptr || s->end || s->noticed) return;
  const int r = ReservationOf(s->offering);
  if (r >= 0) ++taken_back_[size_t(r)];
  if (observer_ != nullptr) observer_->OnTakeBack(s->info.instance_id);
  Interrupt(index, at);
}

int SimCloud::ReservedInUse(size_t r) const { return live_count_[first_reserved_ + r]; }

int SimCloud::ReservedSlotsOpen(size_t r, WallTime t) const {
  const Reservation& res = config_.reservations[r];
  return res.OpenAt(t) ? res.total_count : 0;
}

std::vector<ReservationUse> SimCloud::ReservationUses(WallTime end) const {
  std::vector<ReservationUse> out;
  if (config_.reservations.empty()) return out;  // no instance to look at
  for (size_t r = 0; r < config_.reservations.size(); ++r) {
    const Reservation& res = config_.reservations[r];
    ReservationUse use;
    use.reservation = res;
    const WallTime until = res.end ? std::min(end, *res.end) : end;
    use.slot_hours = res.total_count * HoursBetween(res.start, until);
    use.cost_usd = res.usd_per_hour * use.slot_hours;
    use.used_usd = forgotten_reserved_usd_[r];
    use.instances_taken_back = taken_back_[r];
    out.push_back(std::move(use));
  }
  for (const auto& [index, s] : instances_) {
    const int r = ReservationOf(s.offering);
    if (r < 0) continue;
    const InstanceBill bill = BillOf(s, end);
    out[size_t(r)].used_usd += bill.usd;
    out[size_t(r)].used_hours += HoursBetween(bill.launch, bill.end);
  }
  for (ReservationUse& use : out) use.unused_usd = std::max(0.0, use.cost_usd - use.used_usd);
  return out;
}

}  // namespace gpuscaler::sim
