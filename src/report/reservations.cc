// The last stage of BuildCostFacts: what each reservation cost over the
// range, used and unused (cost_model.h, ReservationFact).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "cost_facts_impl.h"
#include "tables.h"
#include "utc_days.h"

namespace gpuscaler::report::internal {
namespace {

std::string Usd(double usd) { return FormatCents(std::llround(usd * 100)) + " USD"; }

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

// Adds `count` slots at `usd_per_hour` held over [from, to) to `fact`, day
// by day.
void AddPaidTime(WallTime from, WallTime to, int count, double usd_per_hour, ReservationFact* fact) {
  int64_t t = ToUnixSeconds(from);
  const int64_t end = ToUnixSeconds(to);
  while (t < end) {
    const int64_t day = FloorDiv(t, kSecondsPerDay);
    const int64_t next = std::min(end, (day + 1) * kSecondsPerDay);
    const double slot_seconds = static_cast<double>(count) * static_cast<double>(next - t);
    ReservationFact::Day& d = fact->days[day];
    d.slot_seconds += slot_seconds;
    d.cost_usd += usd_per_hour * slot_seconds / 3600.0;
    fact->slot_seconds += slot_seconds;
    fact->cost_usd += usd_per_hour * slot_seconds / 3600.0;
    t = next;
  }
}

// The paid time of one reservation's versions (rows of one id, by
// first_seen) within [from, horizon): the first from its start, each later
// one from when it was first listed; each until its end, the next
// version's first listing, or (the last) the listing that no longer had it.
ReservationFact PaidTime(const std::vector<const ReservationRow*>& versions, WallTime from, WallTime to,
                         WallTime horizon) {
  ReservationFact fact;
  fact.record = versions.back()->record;
  bool any = false;
  for (size_t i = 0; i < versions.size(); ++i) {
    const ReservationRow& row = *versions[i];
    const Reservation& r = row.record.reservation;
    WallTime begin = i == 0 ? r.start : std::max(r.start, row.first_seen);
    WallTime until = horizon;
    if (r.end) until = std::min(until, *r.end);
    if (i + 1 < versions.size()) {
      until = std::min(until, versions[i + 1]->first_seen);
    } else if (row.last_seen) {
      until = std::min(until, *row.last_seen);
    }
    begin = std::max(begin, from);
    if (until <= begin) continue;
    AddPaidTime(begin, until, r.total_count, r.usd_per_hour, &fact);
    fact.record = row.record;
    fact.paid_from = any ? std::min(fact.paid_from, begin) : begin;
    fact.paid_to = any ? std::max(fact.paid_to, until) : until;
    any = true;
  }
  const Reservation& first = versions.front()->record.reservation;
  fact.purchased_in_range = first.kind == ReservationKind::kCapacityBlock && first.upfront_usd > 0 &&
                            first.start >= from && first.start < to;
  return fact;
}

}  // namespace

Status AddReservationFacts(AuditReader& reader, CostFacts* facts) {
  CostFacts& f = *facts;
  Result<std::vector<ReservationRow>> rows = reader.Reservations();
  if (!rows) return rows.error();
  if (rows->empty() && f.charges.empty()) return Status::Ok();
  // Slots are paid up to the data's end (f.as_of: an ended run's end at the
  // latest, AuditReader::LastRecordTime), unless as_of says otherwise.
  const WallTime horizon = std::min(f.to, std::max(f.as_of, f.from));
  std::map<std::string, ReservationFact> by_id;
  std::set<std::string> unrecorded;
  for (size_t i = 0; i < rows->size();) {
    std::vector<const ReservationRow*> versions;
    const std::string& id = (*rows)[i].record.reservation.id;
    size_t j = i;
    for (; j < rows->size() && (*rows)[j].record.reservation.id == id; ++j) versions.push_back(&(*rows)[j]);
    ReservationFact fact = PaidTime(versions, f.from, f.to, horizon);
    if (fact.slot_seconds > 0 || fact.purchased_in_range) by_id.emplace(id, std::move(fact));
    i = j;
  }
  // The instances in reservations: their bills are the used part.
  for (const Charge& c : f.charges) {
    const NodeFact& n = f.nodes[static_cast<size_t>(c.node)];
    if (n.reservation_id.empty()) continue;
    auto [it, unknown] = by_id.try_emplace(n.reservation_id);
    ReservationFact& fact = it->second;
    if (unknown) {
      unrecorded.insert(n.reservation_id);
      fact.record.reservation.id = n.reservation_id;
      fact.record.reservation.instance_type = n.instance_type;
      fact.record.reservation.region = n.region;
      fact.record.reservation.zone = n.zone;
      f.warnings.push_back(
          "reservation '" + n.reservation_id +
          "' holds instances but is not recorded (a store or run from before reservations were "
          "recorded): its cost is what its instances cost; its unused part is unknown");
    }
    const double usd = c.usd_per_hour * static_cast<double>(c.billed_seconds) / 3600.0;
    fact.used_usd += usd;
    fact.used_seconds += static_cast<double>(c.billed_seconds);
    fact.used_usd_by_pool[n.pool] += usd;
    fact.used_seconds_by_pool[n.pool] += static_cast<double>(c.billed_seconds);
    fact.days[FloorDiv(ToUnixSeconds(c.start), kSecondsPerDay)].used_usd += usd;
    if (unknown) fact.record.reservation.usd_per_hour = c.usd_per_hour;
  }
  for (auto& [id, fact] : by_id) {
    if (unrecorded.count(id) > 0) fact.cost_usd = fact.used_usd;  // nothing known beyond its instances
    fact.unused_usd = std::max(0.0, fact.cost_usd - fact.used_usd);
    if (fact.used_usd > fact.cost_usd + 0.005) {
      f.warnings.push_back("reservation '" + id + "': its instances cost " + Usd(fact.used_usd) +
                           ", more than its slots' " + Usd(fact.cost_usd) +
                           " in the range (instances recorded outside its paid time)");
    }
    fact.unused_pool = Joined(fact.record.pools);
    f.reservations.push_back(std::move(fact));
  }
  return Status::Ok();
}

}  // namespace gpuscaler::report::internal
