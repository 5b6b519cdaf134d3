// The reservations view (used and unused per reservation and pool) and the
// buy_block view, as tables and as JSON.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "tables.h"

namespace gpuscaler::report::internal {
namespace {


double Usd(int64_t cents) { return static_cast<double>(cents) / 100.0; }

// One reservation's part in one pool.
struct PoolPart {
  int64_t used_cents = 0;
  int64_t unused_cents = 0;
  double used_seconds = 0;
  double unused_seconds = 0;
};

std::map<std::string, PoolPart> PoolParts(const ReservationFact& r) {
  const ReservationCents cents = ReservationCentsOf(r);
  std::vector<double> used;
  std::vector<std::string> pools;
  for (const auto& [pool, usd] : r.used_usd_by_pool) {
    pools.push_back(pool);
    used.push_back(usd);
  }
  const std::vector<int64_t> used_cents = CentsPreservingTotal(used, cents.used);
  std::map<std::string, PoolPart> parts;
  for (size_t i = 0; i < pools.size(); ++i) {
    PoolPart& p = parts[pools[i]];
    p.used_cents = used_cents[i];
    p.used_seconds = r.used_seconds_by_pool.at(pools[i]);
  }
  if (cents.unused > 0 || r.slot_seconds > r.used_seconds) {
    PoolPart& p = parts[r.unused_pool];
    p.unused_cents = cents.unused;
    p.unused_seconds = std::max(0.0, r.slot_seconds - r.used_seconds);
  }
  return parts;
}

std::string Kind(const ReservationFact& r) { return std::string(ToString(r.record.reservation.kind)); }

}  // namespace

ReservationCents ReservationCentsOf(const ReservationFact& r) {
  ReservationCents c;
  c.cost = std::llround(r.cost_usd * 100.0);
  c.used = std::llround(r.used_usd * 100.0);
  c.unused = std::max<int64_t>(0, c.cost - c.used);
  if (r.unused_usd <= 0) c.unused = 0;
  return c;
}

Table ReservationsTable(const CostFacts& facts) {
  Table t;
  t.view = View::kReservations;
  t.title = "Reserved capacity: used and unused, by reservation and pool";
  t.columns = {"reservation_id", "kind",       "instance_type", "region",   "zone",       "pool",
               "slots",          "used_hours", "unused_hours",  "used_usd", "unused_usd", "cost_usd"};
  for (const ReservationFact& r : facts.reservations) {
    const Reservation& res = r.record.reservation;
    for (const auto& [pool, p] : PoolParts(r)) {
      t.rows.push_back({Text(res.id), Text(Kind(r)), Text(res.instance_type), Text(res.region),
                        Text(res.zone), Text(pool), Integer(res.total_count),
                        Number(p.used_seconds / 3600.0, 4), Number(p.unused_seconds / 3600.0, 4),
                        Money(p.used_cents), Money(p.unused_cents), Money(p.used_cents + p.unused_cents)});
    }
  }
  return t;
}

nlohmann::ordered_json ReservationsJson(const CostFacts& facts) {
  nlohmann::ordered_json out;
  int64_t cost = 0, used = 0, unused = 0, upfront = 0;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ReservationFact& r : facts.reservations) {
    const Reservation& res = r.record.reservation;
    const ReservationCents c = ReservationCentsOf(r);
    cost += c.cost;
    used += c.used;
    unused += c.unused;
    const int64_t fee = r.purchased_in_range ? std::llround(res.upfront_usd * 100.0) : 0;
    upfront += fee;
    nlohmann::ordered_json j;
    j["id"] = res.id;
    j["kind"] = Kind(r);
    j["instance_type"] = res.instance_type;
    j["region"] = res.region;
    j["zone"] = res.zone;
    j["pools"] = r.record.pools;
    j["slots"] = res.total_count;
    j["start"] = FormatRfc3339(res.start);
    j["end"] = res.end ? nlohmann::ordered_json(FormatRfc3339(*res.end)) : nullptr;
    j["usd_per_slot_hour"] = res.usd_per_hour;
    j["upfront_usd"] = res.upfront_usd;
    j["paid_from"] = r.slot_seconds > 0 ? nlohmann::ordered_json(FormatRfc3339(r.paid_from)) : nullptr;
    j["paid_to"] = r.slot_seconds > 0 ? nlohmann::ordered_json(FormatRfc3339(r.paid_to)) : nullptr;
    j["slot_hours"] = std::round(r.slot_seconds / 3.6) / 1000.0;
    j["used_hours"] = std::round(r.used_seconds / 3.6) / 1000.0;
    j["unused_hours"] = std::round(std::max(0.0, r.slot_seconds - r.used_seconds) / 3.6) / 1000.0;
    j["cost_usd"] = Usd(c.cost);
    j["used_usd"] = Usd(c.used);
    j["unused_usd"] = Usd(c.unused);
    j["used_pct"] = r.slot_seconds > 0 ? std::round(1e4 * r.used_seconds / r.slot_seconds) / 100.0 : 0.0;
    // A block's fee is paid once, at its start; its slot-hours carry it
    // spread evenly (usd_per_slot_hour): the purchase is shown where it
    // falls in the range.
    j["purchase_in_range_usd"] = Usd(fee);
    list.push_back(std::move(j));
  }
  out["cost_usd"] = Usd(cost);
  out["used_usd"] = Usd(used);
  out["unused_usd"] = Usd(unused);
  out["purchases_usd"] = Usd(upfront);
  out["by_reservation"] = std::move(list);
  return out;
}

Table BuyBlockTable(const ReportViews& views) {
  Table t;
  t.view = View::kBuyBlock;
  t.title = "Should we buy a block? A what-if on recorded usage";
  t.columns = {"instance_type",     "block_count",         "block_upfront_usd",     "range_hours",
               "block_slot_hours",  "recorded_node_hours", "recorded_gpu_hours",    "recorded_on_demand_usd",
               "recorded_spot_usd", "recorded_usd",        "covered_node_hours",    "covered_gpu_hours",
               "covered_usd",       "still_bought_usd",    "block_idle_slot_hours", "with_block_usd",
               "net_savings_usd",   "peak_nodes"};
  if (!views.buy_block) return t;
  const BlockWhatIf& b = *views.buy_block;
  const int64_t on_demand = std::llround(b.on_demand_usd * 100.0);
  const int64_t spot = std::llround(b.spot_usd * 100.0);
  const int64_t recorded = on_demand + spot;
  const int64_t covered = std::min<int64_t>(recorded, std::llround(b.covered_usd * 100.0));
  const int64_t fee = std::llround(b.upfront_usd * 100.0);
  const int64_t with_block = fee + recorded - covered;
  t.rows.push_back({Text(b.instance_type), Integer(b.count), Money(fee), Number(b.range_hours, 3),
                    Number(b.slot_hours, 3), Number(b.node_hours, 3), Number(b.gpu_hours, 3),
                    Money(on_demand), Money(spot), Money(recorded), Number(b.covered_node_hours, 3),
                    Number(b.covered_gpu_hours, 3), Money(covered), Money(recorded - covered),
                    Number(b.slot_hours - b.covered_node_hours, 3), Money(with_block),
                    Money(recorded - with_block), Integer(b.peak_nodes)});
  return t;
}

}  // namespace gpuscaler::report::internal
