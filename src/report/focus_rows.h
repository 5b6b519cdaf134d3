// FOCUS rows as values, shared by the node rows (render_focus.cc) and the
// reservation rows (render_focus_reservations.cc). Private to src/report.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "clouds.h"
#include "tables.h"

namespace gpuscaler::report::internal {

// Every Mandatory column; the Conditional ones whose condition AWS and GCP
// meet (they support sub-accounts, capacity reservations, commitment
// discounts, negotiated and published unit prices, regions, resources,
// tags, and billing in another currency than prices); the Recommended
// ones that apply to a VM charge. Left out: BillingAccountType and SubAccountType (required only of a
// provider with several account types; AWS and GCP each have one), InvoiceId
// (Recommended; the store knows no invoice) and the PricingCurrency* prices
// (required only for virtual currencies; ours are USD list prices). Custom
// columns are prefixed x_.
inline constexpr std::string_view kFocusColumns[] = {
    "BillingAccountId",
    "BillingAccountName",
    "SubAccountId",
    "SubAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "ListUnitPrice",
    "ContractedUnitPrice",
    "PricingCategory",
    "PricingCurrency",
    "PricingQuantity",
    "PricingUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "CapacityReservationId",
    "CapacityReservationStatus",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ProviderName",
    "PublisherName",
    "InvoiceIssuerName",
    "ServiceCategory",
    "ServiceSubcategory",
    "ServiceName",
    "RegionId",
    "RegionName",
    "AvailabilityZone",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "SkuId",
    "SkuMeter",
    "SkuPriceId",
    "SkuPriceDetails",
    "Tags",
    "x_Pool",
    "x_CapacityType",
    "x_GpuCount",
    "x_GpuHours",
    "x_DecisionId",
};
inline constexpr size_t kFocusColumnCount = std::size(kFocusColumns);

// The index of column `name`; a name not in kFocusColumns does not compile.
consteval size_t Col(std::string_view name) {
  for (size_t i = 0; i < kFocusColumnCount; ++i) {
    if (kFocusColumns[i] == name) return i;
  }
  throw "not a FOCUS column of this export";
}

// One row; an empty value is null.
using FocusRow = std::array<std::string, kFocusColumnCount>;

// A row with where it sorts: by charge start, then resource id.
struct FocusLine {
  WallTime start{};
  std::string resource;
  FocusRow row;
};

// Numeric Format: plain decimal, no exponent, no trailing zeros, no "-0".
std::string FocusDecimal(double v);

// What every row of one store shares.
struct FocusContext {
  const StoreReport* report = nullptr;
  std::string cluster;  // SubAccountId and SubAccountName; empty: null
  bool fleet = false;   // a fleet report: the cluster is also a tag
};

// Fills the columns every row of the store has: the billing account, the
// sub-account, the currencies, the provider (query.provider_name, else
// `cloud`'s), the service (likewise), the region and zone.
void FillCommonColumns(const FocusContext& ctx, const CloudNames& cloud, const std::string& region,
                       const std::string& zone, FocusRow* row);

// FOCUS's name of a reservation kind (CommitmentDiscountType, ResourceType):
// "Capacity Reservation" or "Capacity Block".
std::string_view FocusReservationType(ReservationKind kind);

// The reservation rows of one store (render_focus_reservations.cc): per
// reservation and UTC day its unused slot-hours (Usage, status Unused), and
// each Capacity Block purchased in the range (Purchase, the fee). The
// used rows are the reserved nodes' own (render_focus.cc).
void AppendReservationRows(const FocusContext& ctx, std::vector<FocusLine>* lines);

}  // namespace gpuscaler::report::internal
