// FinOps FOCUS 1.2 cost and usage rows: one per node, UTC day and price.
// Which columns, and where each value comes from: docs/reports.md.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "clouds.h"
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

// Every Mandatory column; the Conditional ones whose condition AWS and GCP
// meet (they support sub-accounts, capacity reservations, commitment
// discounts, negotiated and published unit prices, regions, resources,
// tags, and billing in another currency than prices); the Recommended
// ones that apply to a VM charge. Left out: BillingAccountType and SubAccountType (required only of a
// provider with several account types; AWS and GCP each have one), InvoiceId
// (Recommended; the store knows no invoice) and the PricingCurrency* prices
// (required only for virtual currencies; ours are USD list prices). Custom
// columns are prefixed x_.
const char* const kColumns[] = {
    "BillingAccountId", "BillingAccountName", "SubAccountId", "SubAccountName", "BillingCurrency",
    "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory",
    "ChargeClass", "ChargeDescription", "ChargeFrequency", "BilledCost", "EffectiveCost", "ListCost",
    "ContractedCost", "ListUnitPrice", "ContractedUnitPrice", "PricingCategory", "PricingCurrency",
    "PricingQuantity", "PricingUnit", "ConsumedQuantity", "ConsumedUnit", "CapacityReservationId",
    "CapacityReservationStatus", "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName",
    "CommitmentDiscountQuantity", "CommitmentDiscountStatus", "CommitmentDiscountType", "CommitmentDiscountUnit",
    "ProviderName", "PublisherName", "InvoiceIssuerName", "ServiceCategory", "ServiceSubcategory", "ServiceName",
    "RegionId", "RegionName", "AvailabilityZone", "ResourceId", "ResourceName", "ResourceType", "SkuId",
    "SkuMeter", "SkuPriceId", "SkuPriceDetails", "Tags", "x_Pool", "x_CapacityType", "x_GpuCount", "x_GpuHours",
    "x_DecisionId",
};

std::string Header() {
  std::string out;
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    out += kColumns[i];
    out += i + 1 < std::size(kColumns) ? "," : "\r\n";
  }
  return out;
}

// Where a node's cloud came from, worst last: the notices name the runs
// whose rows were not named from a recorded cloud.
enum class CloudFrom { kRecorded, kRegion, kDefault };

// Stores before schema version 6 recorded no cloud: their nodes' region ids
// tell it where the table knows them; else Amazon Web Services, what every
// row named before.
std::pair<const CloudNames*, CloudFrom> CloudOf(const NodeFact& n, const RunRow* run) {
  if (run != nullptr) {
    if (const CloudNames* c = FindCloud(run->cloud.name)) return {c, CloudFrom::kRecorded};
  }
  if (const RegionNames* r = FindRegion(n.region)) return {FindCloud(r->cloud), CloudFrom::kRegion};
  return {FindCloud("aws"), CloudFrom::kDefault};
}

// The finalized tags of the node's instance: what its run recorded gpuscaler
// puts on every instance and on its pool's, as the cloud shows them; then
// gpuscaler's own keys (pool, capacity type, node; the cluster in a fleet
// report) where the instance has no tag of that key.
std::string TagsOf(const NodeFact& n, const RunRow* run, const std::string* fleet_cluster) {
  nlohmann::ordered_json tags = nlohmann::ordered_json::object();
  if (run != nullptr) {
    for (const auto& [k, v] : run->cloud.instance_tags) tags[k] = v;
    if (auto pool = run->cloud.pool_tags.find(n.pool); pool != run->cloud.pool_tags.end()) {
      for (const auto& [k, v] : pool->second) tags[k] = v;
    }
  }
  auto add = [&](const char* key, const std::string& value) {
    if (!tags.contains(key)) tags[key] = value;
  };
  add("gpuscaler.io/pool", n.pool);
  add("gpuscaler.io/capacity-type", std::string(ToString(n.capacity_type)));
  add("gpuscaler.io/node", n.node_id);
  if (fleet_cluster != nullptr) add("gpuscaler.io/cluster", *fleet_cluster);
  return tags.dump();
}

struct RowContext {
  const StoreReport* report = nullptr;
  std::string cluster;  // SubAccountId and SubAccountName; empty: null
  bool fleet = false;   // a fleet report: the cluster is also a tag
};

// What the operator is told of the rows: the runs whose rows were not named
// from a recorded cloud (by how), the regions the table does not name.
struct Guesses {
  std::map<CloudFrom, std::set<std::string>> runs;
  std::set<std::string> regions;
};

// The rows of one store, in charge order.
void AppendRows(const RowContext& ctx, std::string* out_rows, Guesses* guesses) {
  const CostFacts& facts = ctx.report->facts;
  const ReportQuery& query = ctx.report->query;
  std::map<int64_t, const RunRow*> runs;
  for (const RunRow& r : ctx.report->scope.runs) runs[r.id] = &r;
  std::string& out = *out_rows;
  std::vector<const Charge*> order;
  order.reserve(facts.charges.size());
  for (const Charge& c : facts.charges) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [&](const Charge* a, const Charge* b) {
    if (a->start != b->start) return a->start < b->start;
    return facts.nodes[static_cast<size_t>(a->node)].instance_id < facts.nodes[static_cast<size_t>(b->node)].instance_id;
  });
  const std::string account_name = query.billing_account_name.empty() ? query.billing_account_id
                                                                      : query.billing_account_name;
  std::vector<std::string> row;
  for (const Charge* c : order) {
    const NodeFact& n = facts.nodes[static_cast<size_t>(c->node)];
    auto run = runs.find(n.run_id);
    const RunRow* run_row = run == runs.end() ? nullptr : run->second;
    const auto [cloud, from] = CloudOf(n, run_row);
    if (from != CloudFrom::kRecorded) {
      guesses->runs[from].insert(run_row != nullptr ? "'" + run_row->run.name + "' (id " +
                                                          std::to_string(run_row->id) + ")"
                                                    : "(rows of no run)");
    }
    // FOCUS wants a RegionName wherever there is a RegionId: one the table
    // does not know keeps its id.
    const RegionNames* region = FindRegion(n.region);
    if (region == nullptr) guesses->regions.insert(n.region);
    const double hours = static_cast<double>(c->billed_seconds) / 3600.0;
    const double cost = c->usd_per_hour * hours;
    const double list = n.on_demand_usd_per_hour * hours;
    const bool spot = n.capacity_type == CapacityType::kSpot;
    const std::string capacity(ToString(n.capacity_type));
    const std::string provider = query.provider_name.empty() ? std::string(cloud->provider) : query.provider_name;
    const std::string sku = n.instance_type + "/" + n.region;
    nlohmann::ordered_json details;
    details["InstanceType"] = n.instance_type;
    details["GpuCount"] = n.gpu_count;
    details["x_CapacityType"] = capacity;
    row = {
        query.billing_account_id,
        account_name,
        ctx.cluster,
        ctx.cluster,
        "USD",
        FormatRfc3339(PeriodStart(c->start, Period::kMonth)),
        FormatRfc3339(NextPeriodStart(c->start, Period::kMonth)),
        FormatRfc3339(c->start),
        FormatRfc3339(c->end),
        "Usage",
        "",  // ChargeClass: null, not a correction
        n.instance_type + " " + capacity + " in " + n.zone + ", pool " + n.pool,
        "Usage-Based",
        Decimal(cost),
        Decimal(cost),
        Decimal(list),
        Decimal(cost),
        Decimal(n.on_demand_usd_per_hour),
        Decimal(c->usd_per_hour),
        spot ? "Dynamic" : "Standard",
        "USD",
        Decimal(hours),
        "Hours",
        Decimal(hours),
        "Hours",
        "", "",              // CapacityReservationId, Status: null, gpuscaler buys no reservations
        "", "", "", "", "", "", "",  // CommitmentDiscount*: null, see docs/reports.md
        provider,
        provider,
        provider,
        "Compute",
        "Virtual Machines",
        query.service_name.empty() ? std::string(cloud->service) : query.service_name,
        n.region,
        region != nullptr ? std::string(region->name) : n.region,
        n.zone,
        n.instance_id,
        n.node_id == n.instance_id ? "" : n.node_id,
        "Virtual Machine",
        sku,
        "Instance Hours",
        sku + "/" + capacity + (spot ? "/" + n.zone : ""),
        details.dump(),
        TagsOf(n, run_row, ctx.fleet ? &ctx.cluster : nullptr),
        n.pool,
        capacity,
        std::to_string(n.gpu_count),
        Decimal(hours * n.gpu_count),
        n.decision_id > 0 ? std::to_string(n.decision_id) : "",
    };
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out += ',';
      out += CsvField(row[i]);
    }
    out += "\r\n";
  }
}

std::string JoinedList(const std::set<std::string>& items) {
  std::string list;
  for (const std::string& item : items) list += (list.empty() ? "" : ", ") + item;
  return list;
}

// For the operator: the runs whose rows name a cloud they did not record,
// and the regions named by their id.
void Note(const Guesses& guesses, const ReportQuery& query, std::vector<std::string>* notices) {
  if (query.provider_name.empty() || query.service_name.empty()) {
    for (const auto& [from, runs] : guesses.runs) {
      notices->push_back("FOCUS: run " + JoinedList(runs) +
                         " recorded no cloud (an audit store before schema version 6): ProviderName and ServiceName " +
                         (from == CloudFrom::kRegion ? "follow the nodes' region ids" : "say Amazon Web Services") +
                         "; give provider_name and service_name to name them");
    }
  }
  if (!guesses.regions.empty()) {
    notices->push_back("FOCUS: RegionName repeats the region id for regions without a known display name: " +
                       JoinedList(guesses.regions));
  }
}

}  // namespace

std::string RenderFocusCsv(const StoreReport& store, const std::string& cluster, std::vector<std::string>* notices) {
  std::string out = Header();
  Guesses guesses;
  AppendRows(RowContext{&store, cluster, false}, &out, &guesses);
  Note(guesses, store.query, notices);
  return out;
}

std::string RenderFleetFocusCsv(const FleetParts& fleet, const ReportQuery& query,
                                std::vector<std::string>* notices) {
  std::string out = Header();
  for (const ClusterPart& c : fleet.clusters) {
    Guesses guesses;
    AppendRows(RowContext{c.report, c.cluster, true}, &out, &guesses);
    std::vector<std::string> mine;
    Note(guesses, query, &mine);
    for (const std::string& n : mine) notices->push_back("cluster '" + c.cluster + "': " + n);
  }
  return out;
}

}  // namespace gpuscaler::report::internal
