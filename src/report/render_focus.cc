// FinOps FOCUS 1.1 cost and usage rows: one per node, UTC day and price.
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tables.h"

namespace gpuscaler::report::internal {
namespace {

// Numeric Format: plain decimal, no exponent, no trailing zeros, no "-0".
std::string Decimal(double v) {
  std::string s = FormatFixed(v, 10);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

const char* const kColumns[] = {
    "BillingAccountId", "BillingAccountName", "BillingCurrency",   "BillingPeriodStart", "BillingPeriodEnd",
    "ChargePeriodStart", "ChargePeriodEnd",   "ChargeCategory",    "ChargeClass",        "ChargeDescription",
    "ChargeFrequency",  "BilledCost",         "EffectiveCost",     "ListCost",           "ContractedCost",
    "ListUnitPrice",    "ContractedUnitPrice", "PricingCategory",  "PricingQuantity",    "PricingUnit",
    "ConsumedQuantity", "ConsumedUnit",       "ProviderName",      "PublisherName",      "InvoiceIssuerName",
    "ServiceCategory",  "ServiceSubcategory", "ServiceName",       "RegionId",           "AvailabilityZone",
    "ResourceId",       "ResourceName",       "ResourceType",      "SkuId",              "Tags",
    "x_Pool",           "x_CapacityType",     "x_GpuCount",        "x_GpuHours",         "x_DecisionId",
};

// Where a fleet report's SubAccountId and SubAccountName go: after the
// billing account's columns.
constexpr size_t kSubAccountAt = 2;

std::string Header(bool fleet) {
  std::string out;
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    if (fleet && i == kSubAccountAt) out += "SubAccountId,SubAccountName,";
    out += kColumns[i];
    out += i + 1 < std::size(kColumns) ? "," : "\r\n";
  }
  return out;
}

// The rows of one store; `cluster` (fleet reports): the sub-account columns
// and tag.
void AppendRows(const CostFacts& facts, const ReportQuery& query, const std::string* cluster,
                std::string* out_rows) {
  std::string& out = *out_rows;
  std::vector<const Charge*> order;
  order.reserve(facts.charges.size());
  for (const Charge& c : facts.charges) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [&](const Charge* a, const Charge* b) {
    if (a->start != b->start) return a->start < b->start;
    return facts.nodes[static_cast<size_t>(a->node)].instance_id < facts.nodes[static_cast<size_t>(b->node)].instance_id;
  });
  std::vector<std::string> row;
  for (const Charge* c : order) {
    const NodeFact& n = facts.nodes[static_cast<size_t>(c->node)];
    const double hours = static_cast<double>(c->billed_seconds) / 3600.0;
    const double cost = c->usd_per_hour * hours;
    const double list = n.on_demand_usd_per_hour * hours;
    const bool spot = n.capacity_type == CapacityType::kSpot;
    nlohmann::ordered_json tags;
    tags["gpuscaler.io/pool"] = n.pool;
    tags["gpuscaler.io/capacity-type"] = std::string(ToString(n.capacity_type));
    tags["gpuscaler.io/node"] = n.node_id;
    if (cluster != nullptr) tags["gpuscaler.io/cluster"] = *cluster;
    row = {
        query.billing_account_id,
        "",  // null: the store does not know the account's name
        "USD",
        FormatRfc3339(PeriodStart(c->start, Period::kMonth)),
        FormatRfc3339(NextPeriodStart(c->start, Period::kMonth)),
        FormatRfc3339(c->start),
        FormatRfc3339(c->end),
        "Usage",
        "",  // null: not a correction
        n.instance_type + " " + std::string(ToString(n.capacity_type)) + " in " + n.zone + ", pool " + n.pool,
        "Usage-Based",
        Decimal(cost),
        Decimal(cost),
        Decimal(list),
        Decimal(cost),
        Decimal(n.on_demand_usd_per_hour),
        Decimal(c->usd_per_hour),
        spot ? "Dynamic" : "Standard",
        Decimal(hours),
        "Hours",
        Decimal(hours),
        "Hours",
        query.provider_name,
        query.provider_name,
        query.provider_name,
        "Compute",
        "Virtual Machines",
        query.service_name,
        n.region,
        n.zone,
        n.instance_id,
        n.node_id,
        "Virtual Machine",
        n.instance_type,
        tags.dump(),
        n.pool,
        std::string(ToString(n.capacity_type)),
        std::to_string(n.gpu_count),
        Decimal(hours * n.gpu_count),
        n.decision_id > 0 ? std::to_string(n.decision_id) : "",
    };
    if (cluster != nullptr) {
      row.insert(row.begin() + static_cast<std::ptrdiff_t>(kSubAccountAt), {*cluster, *cluster});
    }
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out += ',';
      out += CsvField(row[i]);
    }
    out += "\r\n";
  }
}

}  // namespace

std::string RenderFocusCsv(const CostFacts& facts, const ReportQuery& query) {
  std::string out = Header(false);
  AppendRows(facts, query, nullptr, &out);
  return out;
}

std::string RenderFleetFocusCsv(const FleetParts& fleet, const ReportQuery&) {
  std::string out = Header(true);
  for (const ClusterPart& c : fleet.clusters) AppendRows(c.report->facts, c.report->query, &c.cluster, &out);
  return out;
}

}  // namespace gpuscaler::report::internal
