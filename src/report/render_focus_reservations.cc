// FOCUS rows of the reservations themselves (focus_rows.h): their unused
// slot-hours per UTC day, and the Capacity Blocks bought in the range.
// Which values, and why: docs/reports.md, "Reserved capacity in FOCUS".
#include <algorithm>
#include <nlohmann/json.hpp>

#include "focus_rows.h"

namespace gpuscaler::report::internal {
namespace {

// The cloud of a reservation: its region's, else the first selected run's
// recorded one, else Amazon Web Services (as node rows default).
const CloudNames& CloudOfReservation(const Reservation& r, const std::vector<RunRow>& runs) {
  if (const RegionNames* region = FindRegion(r.region)) {
    if (const CloudNames* c = FindCloud(region->cloud)) return *c;
  }
  for (const RunRow& run : runs) {
    if (const CloudNames* c = FindCloud(run.cloud.name)) return *c;
  }
  return *FindCloud("aws");
}

// The columns every row of reservation `r` has: its identity as a
// resource and as a commitment, its SKU, its tags.
FocusRow ReservationRow(const FocusContext& ctx, const ReservationFact& r) {
  const Reservation& res = r.record.reservation;
  FocusRow row;
  FillCommonColumns(ctx, CloudOfReservation(res, ctx.report->scope.runs), res.region, res.zone, &row);
  const std::string type(FocusReservationType(res.kind));
  const std::string sku = res.instance_type + "/" + res.region;
  row[Col("CapacityReservationId")] = res.id;
  row[Col("CommitmentDiscountId")] = res.id;
  row[Col("CommitmentDiscountCategory")] = "Usage";
  row[Col("CommitmentDiscountType")] = type;
  row[Col("CommitmentDiscountUnit")] = "Hours";
  if (auto name = res.tags.find("Name"); name != res.tags.end())
    row[Col("CommitmentDiscountName")] = name->second;
  row[Col("ResourceId")] = res.id;
  row[Col("ResourceType")] = type;
  row[Col("SkuId")] = sku;
  row[Col("SkuMeter")] = "Instance Hours";
  row[Col("SkuPriceId")] = sku + "/reserved";
  nlohmann::ordered_json details;
  details["InstanceType"] = res.instance_type;
  details["x_CapacityType"] = "reserved";
  details["x_Slots"] = res.total_count;
  row[Col("SkuPriceDetails")] = details.dump();
  nlohmann::ordered_json tags = nlohmann::ordered_json::object();
  for (const auto& [k, v] : res.tags) tags[k] = v;
  if (!tags.contains("gpuscaler.io/pool")) tags["gpuscaler.io/pool"] = r.unused_pool;
  if (!tags.contains("gpuscaler.io/capacity-type")) tags["gpuscaler.io/capacity-type"] = "reserved";
  if (ctx.fleet && !tags.contains("gpuscaler.io/cluster")) tags["gpuscaler.io/cluster"] = ctx.cluster;
  row[Col("Tags")] = tags.dump();
  row[Col("x_Pool")] = r.unused_pool;
  row[Col("x_CapacityType")] = "reserved";
  return row;
}

// The reservation's unused slot-hours of one UTC day, at the slot's cost: a
// Usage charge with nothing consumed. An ODCR bills them by the hour; a
// Capacity Block's were billed with its purchase (BilledCost 0).
FocusLine UnusedRow(const FocusContext& ctx, const ReservationFact& r, int64_t day, double unused_usd) {
  const Reservation& res = r.record.reservation;
  const WallTime start = std::max(r.paid_from, FromUnixSeconds(day * 86400));
  const WallTime end = std::min(r.paid_to, FromUnixSeconds((day + 1) * 86400));
  const double hours = unused_usd / res.usd_per_hour;
  FocusLine line{start, res.id, ReservationRow(ctx, r)};
  FocusRow& row = line.row;
  row[Col("BillingPeriodStart")] = FormatRfc3339(PeriodStart(start, Period::kMonth));
  row[Col("BillingPeriodEnd")] = FormatRfc3339(NextPeriodStart(start, Period::kMonth));
  row[Col("ChargePeriodStart")] = FormatRfc3339(start);
  row[Col("ChargePeriodEnd")] = FormatRfc3339(end);
  row[Col("ChargeCategory")] = "Usage";
  row[Col("ChargeDescription")] = "Unused slots of " + std::string(FocusReservationType(res.kind)) + " " +
                                  res.id + " (" + std::to_string(res.total_count) + " x " +
                                  res.instance_type + " in " + res.zone + ")";
  row[Col("ChargeFrequency")] = "Usage-Based";
  row[Col("BilledCost")] = res.kind == ReservationKind::kCapacityBlock ? "0" : FocusDecimal(unused_usd);
  row[Col("EffectiveCost")] = FocusDecimal(unused_usd);
  row[Col("ListCost")] = FocusDecimal(unused_usd);
  row[Col("ContractedCost")] = FocusDecimal(unused_usd);
  row[Col("ListUnitPrice")] = FocusDecimal(res.usd_per_hour);
  row[Col("ContractedUnitPrice")] = FocusDecimal(res.usd_per_hour);
  row[Col("PricingCategory")] = "Committed";
  row[Col("PricingQuantity")] = FocusDecimal(hours);
  row[Col("PricingUnit")] = "Hours";
  row[Col("CapacityReservationStatus")] = "Unused";
  row[Col("CommitmentDiscountStatus")] = "Unused";
  row[Col("CommitmentDiscountQuantity")] = FocusDecimal(hours);
  return line;
}

// A Capacity Block bought in the range: its whole fee, once, at its start,
// for its slot-hours (EffectiveCost 0: its usage rows carry the fee spread
// over the block's hours).
FocusLine PurchaseRow(const FocusContext& ctx, const ReservationFact& r) {
  const Reservation& res = r.record.reservation;
  const WallTime end = res.end.value_or(res.start + Seconds(3600));
  const double slot_hours = res.total_count * static_cast<double>((end - res.start).count()) / 3600.0;
  FocusLine line{res.start, res.id, ReservationRow(ctx, r)};
  FocusRow& row = line.row;
  row[Col("BillingPeriodStart")] = FormatRfc3339(PeriodStart(res.start, Period::kMonth));
  row[Col("BillingPeriodEnd")] = FormatRfc3339(NextPeriodStart(res.start, Period::kMonth));
  row[Col("ChargePeriodStart")] = FormatRfc3339(res.start);
  row[Col("ChargePeriodEnd")] = FormatRfc3339(end);
  row[Col("ChargeCategory")] = "Purchase";
  row[Col("ChargeDescription")] = "Capacity Block " + res.id + " (" + std::to_string(res.total_count) +
                                  " x " + res.instance_type + " in " + res.zone + "), paid up front";
  row[Col("ChargeFrequency")] = "One-Time";
  row[Col("BilledCost")] = FocusDecimal(res.upfront_usd);
  row[Col("EffectiveCost")] = "0";
  row[Col("ListCost")] = FocusDecimal(res.upfront_usd);
  row[Col("ContractedCost")] = FocusDecimal(res.upfront_usd);
  const double unit = slot_hours > 0 ? res.upfront_usd / slot_hours : 0;
  row[Col("ListUnitPrice")] = FocusDecimal(unit);
  row[Col("ContractedUnitPrice")] = FocusDecimal(unit);
  row[Col("PricingCategory")] = "Standard";
  row[Col("PricingQuantity")] = FocusDecimal(slot_hours);
  row[Col("PricingUnit")] = "Hours";
  row[Col("CommitmentDiscountQuantity")] = FocusDecimal(slot_hours);
  return line;
}

}  // namespace

void AppendReservationRows(const FocusContext& ctx, std::vector<FocusLine>* lines) {
  for (const ReservationFact& r : ctx.report->facts.reservations) {
    const Reservation& res = r.record.reservation;
    if (r.purchased_in_range) lines->push_back(PurchaseRow(ctx, r));
    if (res.usd_per_hour <= 0) continue;
    for (const auto& [day, d] : r.days) {
      const double unused = d.cost_usd - d.used_usd;
      // Less than a thousandth of a cent is the float residue of a fully used day.
      if (unused < 1e-5) continue;
      lines->push_back(UnusedRow(ctx, r, day, unused));
    }
  }
}

}  // namespace gpuscaler::report::internal
