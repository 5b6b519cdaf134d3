// FinOps FOCUS 1.2 cost and usage rows: one per node, UTC day and price,
// and the reservations' own (focus_rows.h).
// Which columns, and where each value comes from: docs/reports.md.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "focus_rows.h"

namespace gpuscaler::report::internal {
namespace {

std::string Header() {
  std::string out;
  for (size_t i = 0; i < kFocusColumnCount; ++i) {
    out += kFocusColumns[i];
    out += i + 1 < kFocusColumnCount ? "," : "\r\n";
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


// What the operator is told of the rows: the runs whose rows were not named
// from a recorded cloud (by how), the regions the table does not name.
struct Guesses {
  std::map<CloudFrom, std::set<std::string>> runs;
  std::set<std::string> regions;
};

// The reservation a reserved node is in, as the report knows it (null:
// not recorded).
const ReservationFact* ReservationOf(const CostFacts& facts, const std::string& id) {
  for (const ReservationFact& r : facts.reservations) {
    if (r.record.reservation.id == id) return &r;
  }
  return nullptr;
}

// The commitment columns of a reserved node's charge (`hours` of it): the
// used part of its reservation. A Capacity Block's hours were billed with
// its purchase: their BilledCost is 0, their EffectiveCost the fee's share.
void FillUsedReservation(const NodeFact& n, const ReservationFact* r, double hours, FocusRow* row) {
  FocusRow& out = *row;
  const bool block = r != nullptr && r->record.reservation.kind == ReservationKind::kCapacityBlock;
  out[Col("CapacityReservationId")] = n.reservation_id;
  out[Col("CapacityReservationStatus")] = "Used";
  out[Col("CommitmentDiscountId")] = n.reservation_id;
  out[Col("CommitmentDiscountCategory")] = "Usage";
  out[Col("CommitmentDiscountType")] =
      std::string(FocusReservationType(block ? ReservationKind::kCapacityBlock : ReservationKind::kDefault));
  out[Col("CommitmentDiscountStatus")] = "Used";
  out[Col("CommitmentDiscountQuantity")] = FocusDecimal(hours);
  out[Col("CommitmentDiscountUnit")] = "Hours";
  if (r != nullptr) {
    if (auto name = r->record.reservation.tags.find("Name"); name != r->record.reservation.tags.end()) {
      out[Col("CommitmentDiscountName")] = name->second;
    }
  }
  out[Col("PricingCategory")] = "Committed";
  if (block) out[Col("BilledCost")] = "0";
}

// One node's charge as a row.
void FillNodeRow(const FocusContext& ctx, const NodeFact& n, const Charge& c, const RunRow* run_row,
                 const CloudNames& cloud, FocusRow* out) {
  const double hours = static_cast<double>(c.billed_seconds) / 3600.0;
  const double cost = c.usd_per_hour * hours;
  const bool spot = n.capacity_type == CapacityType::kSpot;
  const std::string capacity(ToString(n.capacity_type));
  const std::string sku = n.instance_type + "/" + n.region;
  nlohmann::ordered_json details;
  details["InstanceType"] = n.instance_type;
  details["GpuCount"] = n.gpu_count;
  details["x_CapacityType"] = capacity;
  FocusRow& row = *out;
  row.fill(std::string());
  FillCommonColumns(ctx, cloud, n.region, n.zone, &row);
  row[Col("BillingPeriodStart")] = FormatRfc3339(PeriodStart(c.start, Period::kMonth));
  row[Col("BillingPeriodEnd")] = FormatRfc3339(NextPeriodStart(c.start, Period::kMonth));
  row[Col("ChargePeriodStart")] = FormatRfc3339(c.start);
  row[Col("ChargePeriodEnd")] = FormatRfc3339(c.end);
  row[Col("ChargeCategory")] = "Usage";
  row[Col("ChargeDescription")] = n.instance_type + " " + capacity + " in " + n.zone + ", pool " + n.pool;
  row[Col("ChargeFrequency")] = "Usage-Based";
  row[Col("BilledCost")] = FocusDecimal(cost);
  row[Col("EffectiveCost")] = FocusDecimal(cost);
  row[Col("ListCost")] = FocusDecimal(n.on_demand_usd_per_hour * hours);
  row[Col("ContractedCost")] = FocusDecimal(cost);
  row[Col("ListUnitPrice")] = FocusDecimal(n.on_demand_usd_per_hour);
  row[Col("ContractedUnitPrice")] = FocusDecimal(c.usd_per_hour);
  row[Col("PricingCategory")] = spot ? "Dynamic" : "Standard";
  row[Col("PricingQuantity")] = FocusDecimal(hours);
  row[Col("PricingUnit")] = "Hours";
  row[Col("ConsumedQuantity")] = FocusDecimal(hours);
  row[Col("ConsumedUnit")] = "Hours";
  if (!n.reservation_id.empty()) {
    FillUsedReservation(n, ReservationOf(ctx.report->facts, n.reservation_id), hours, &row);
  }
  row[Col("ResourceId")] = n.instance_id;
  row[Col("ResourceName")] = n.node_id == n.instance_id ? "" : n.node_id;
  row[Col("ResourceType")] = "Virtual Machine";
  row[Col("SkuId")] = sku;
  row[Col("SkuMeter")] = "Instance Hours";
  row[Col("SkuPriceId")] = sku + "/" + capacity + (spot ? "/" + n.zone : "");
  row[Col("SkuPriceDetails")] = details.dump();
  row[Col("Tags")] = TagsOf(n, run_row, ctx.fleet ? &ctx.cluster : nullptr);
  row[Col("x_Pool")] = n.pool;
  row[Col("x_CapacityType")] = capacity;
  row[Col("x_GpuCount")] = std::to_string(n.gpu_count);
  row[Col("x_GpuHours")] = FocusDecimal(hours * n.gpu_count);
  row[Col("x_DecisionId")] = n.decision_id > 0 ? std::to_string(n.decision_id) : "";
}

void WriteRow(const FocusRow& row, std::string* out) {
  for (size_t i = 0; i < row.size(); ++i) {
    if (i > 0) *out += ',';
    *out += CsvField(row[i]);
  }
  *out += "\r\n";
}

// Every row of one store, in charge order (then resource id), appended:
// the nodes' rows written as they are made, the few reservation rows
// merged in where they sort.
void AppendRows(const FocusContext& ctx, std::string* out, Guesses* guesses) {
  const CostFacts& facts = ctx.report->facts;
  std::map<int64_t, const RunRow*> runs;
  for (const RunRow& r : ctx.report->scope.runs) runs[r.id] = &r;
  std::vector<const Charge*> order;
  order.reserve(facts.charges.size());
  for (const Charge& c : facts.charges) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [&](const Charge* a, const Charge* b) {
    if (a->start != b->start) return a->start < b->start;
    return facts.nodes[static_cast<size_t>(a->node)].instance_id < facts.nodes[static_cast<size_t>(b->node)].instance_id;
  });
  std::vector<FocusLine> reserved;
  AppendReservationRows(ctx, &reserved);
  std::stable_sort(reserved.begin(), reserved.end(), [](const FocusLine& a, const FocusLine& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.resource < b.resource;
  });
  size_t next_reserved = 0;
  FocusRow row;
  for (const Charge* c : order) {
    const NodeFact& n = facts.nodes[static_cast<size_t>(c->node)];
    for (; next_reserved < reserved.size(); ++next_reserved) {
      const FocusLine& r = reserved[next_reserved];
      if (r.start > c->start || (r.start == c->start && r.resource >= n.instance_id)) break;
      WriteRow(r.row, out);
    }
    auto run = runs.find(n.run_id);
    const RunRow* run_row = run == runs.end() ? nullptr : run->second;
    const auto [cloud, from] = CloudOf(n, run_row);
    if (from != CloudFrom::kRecorded) {
      guesses->runs[from].insert(run_row != nullptr ? "'" + run_row->run.name + "' (id " +
                                                          std::to_string(run_row->id) + ")"
                                                    : "(rows of no run)");
    }
    if (FindRegion(n.region) == nullptr) guesses->regions.insert(n.region);
    FillNodeRow(ctx, n, *c, run_row, *cloud, &row);
    WriteRow(row, out);
  }
  for (; next_reserved < reserved.size(); ++next_reserved) WriteRow(reserved[next_reserved].row, out);
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
  AppendRows(FocusContext{&store, cluster, false}, &out, &guesses);
  Note(guesses, store.query, notices);
  return out;
}

std::string RenderFleetFocusCsv(const FleetParts& fleet, const ReportQuery& query,
                                std::vector<std::string>* notices) {
  std::string out = Header();
  for (const ClusterPart& c : fleet.clusters) {
    Guesses guesses;
    AppendRows(FocusContext{c.report, c.cluster, true}, &out, &guesses);
    std::vector<std::string> mine;
    Note(guesses, query, &mine);
    for (const std::string& n : mine) notices->push_back("cluster '" + c.cluster + "': " + n);
  }
  return out;
}

std::string FocusDecimal(double v) {
  std::string s = FormatFixed(v, 10);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

void FillCommonColumns(const FocusContext& ctx, const CloudNames& cloud, const std::string& region,
                       const std::string& zone, FocusRow* row) {
  const ReportQuery& query = ctx.report->query;
  FocusRow& out = *row;
  const std::string provider = query.provider_name.empty() ? std::string(cloud.provider) : query.provider_name;
  out[Col("BillingAccountId")] = query.billing_account_id;
  out[Col("BillingAccountName")] =
      query.billing_account_name.empty() ? query.billing_account_id : query.billing_account_name;
  out[Col("SubAccountId")] = ctx.cluster;
  out[Col("SubAccountName")] = ctx.cluster;
  out[Col("BillingCurrency")] = "USD";
  out[Col("PricingCurrency")] = "USD";
  out[Col("ProviderName")] = provider;
  out[Col("PublisherName")] = provider;
  out[Col("InvoiceIssuerName")] = provider;
  out[Col("ServiceCategory")] = "Compute";
  out[Col("ServiceSubcategory")] = "Virtual Machines";
  out[Col("ServiceName")] = query.service_name.empty() ? std::string(cloud.service) : query.service_name;
  // FOCUS wants a RegionName wherever there is a RegionId: one the table
  // does not know keeps its id.
  const RegionNames* names = FindRegion(region);
  out[Col("RegionId")] = region;
  out[Col("RegionName")] = names != nullptr ? std::string(names->name) : region;
  out[Col("AvailabilityZone")] = zone;
}

std::string_view FocusReservationType(ReservationKind kind) {
  return kind == ReservationKind::kCapacityBlock ? "Capacity Block" : "Capacity Reservation";
}

}  // namespace gpuscaler::report::internal
