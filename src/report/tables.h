// Report tables as cells, shared by the CSV, JSON and HTML renderers, and
// the text helpers they use. Private to src/report.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/escape.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::report::internal {

struct Cell {
  std::string text;             // as printed in CSV and HTML
  std::optional<double> number;  // numeric cells: the value JSON prints and HTML sorts by
};

// Cells: text as printed; numbers (money in cents, a decimal at
// `decimals` places, an integer) also as the value JSON prints.
Cell Text(std::string s);
Cell Money(int64_t cents);
Cell Number(double v, int decimals);
Cell Integer(int64_t v);

struct Table {
  View view = View::kCosts;
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

// Whole-range totals, money in cents; attributed + idle == cost and
// cost + savings == on-demand equivalent exactly.
struct Totals {
  int64_t cost_cents = 0;
  int64_t attributed_cents = 0;
  int64_t idle_cents = 0;
  int64_t on_demand_cents = 0;
  int64_t savings_cents = 0;       // on_demand_cents - cost_cents
  int64_t spot_savings_cents = 0;  // the spot nodes' part of savings_cents
  int64_t lost_cents = 0;
  double savings_pct = 0;  // of the on-demand equivalent
  double gpu_hours_paid = 0;
  double gpu_hours_allocated = 0;
  std::optional<double> gpu_hours_busy;            // nullopt: not measured
  std::optional<double> gpu_hours_allocated_idle;  // allocated, measured, not busy
  double gpu_hours_lost = 0;
  int64_t nodes = 0;
  int64_t interrupted_nodes = 0;
};

Totals ComputeTotals(const CostFacts& facts, const ReportViews& views);
Table BuildTable(View view, const CostFacts& facts, const ReportViews& views, const ReportQuery& query);

// ---- Reserved capacity (reservation_tables.cc) -------------------------------

// A reservation's money in cents: cost and used rounded once, unused the
// rest (0 when the instances cost more), so used + unused == cost.
struct ReservationCents {
  int64_t cost = 0;
  int64_t used = 0;
  int64_t unused = 0;
};
ReservationCents ReservationCentsOf(const ReservationFact& r);
// The reservations view: per reservation, a row per pool (its instances'
// pools for the used part; its selecting pools, joined, for the unused).
Table ReservationsTable(const CostFacts& facts);
// The "reservations" member of the JSON report (docs/reports.md).
nlohmann::ordered_json ReservationsJson(const CostFacts& facts);
// The buy_block view: one row when the query asked for the what-if.
Table BuyBlockTable(const ReportViews& views);

std::string FormatCents(int64_t cents);     // "1234.56", "-0.05"
std::string FormatFixed(double v, int decimals);  // no "-0.000"
std::string FormatDate(WallTime t);          // "2026-11-01"

std::string RenderCsv(const Table& table);
std::string RenderJson(const CostFacts& facts, const ReportViews& views, const ReportQuery& query);
std::string RenderHtml(const CostFacts& facts, const ReportViews& views, const ReportQuery& query);

// ---- One store's report, before formatting (report.cc) ----------------------

struct StoreReport {
  ReportQuery query;  // with the range resolved
  ReportScope scope;
  CostFacts facts;
  ReportViews views;  // empty for FOCUS
  std::vector<std::string> notices;
  bool empty = false;               // nothing billed or used in the range
  bool range_outside_data = false;  // ... and the range lies wholly outside the data
};
// The facts and views of one store, as RenderReport computes them.
Result<StoreReport> BuildStoreReport(AuditReader& reader, AuditReader* second, const ReportQuery& asked);

// FOCUS rows of one store (render_focus.cc), its cluster as the
// sub-account (empty: null); what the operator should know of the values
// (clouds or region names not recorded) is added to `notices`.
std::string RenderFocusCsv(const StoreReport& store, const std::string& cluster, std::vector<std::string>* notices);

// The two read-only connections RenderReport reads a store with.
struct StoreReaders {
  std::unique_ptr<AuditReader> first;
  std::unique_ptr<AuditReader> second;
};
Result<StoreReaders> OpenStoreReaders(const std::string& db_path);

// ---- Fleet reports (fleet.cc) ---------------------------------------------

// One cluster of a fleet report.
struct ClusterPart {
  std::string cluster;
  std::string db_path;
  const StoreReport* report = nullptr;
  Totals totals;
};

// A fleet report's joined parts: the clusters by name, the summed totals,
// and each view's table with its cluster column (as the query's format
// lists it: all nodes in CSV, the top ones elsewhere).
struct FleetParts {
  std::vector<ClusterPart> clusters;
  std::string scope;
  WallTime from{};
  WallTime to{};
  Totals totals;                      // sums of the clusters' totals
  std::vector<Table> tables;          // by View order
  std::vector<std::string> warnings;  // each prefixed with its cluster
  const Table& table(View v) const { return tables[static_cast<size_t>(v)]; }
};

// FOCUS rows of every cluster: the cluster in SubAccountId and
// SubAccountName, and in Tags; notices as RenderFocusCsv's, each prefixed
// with its cluster.
std::string RenderFleetFocusCsv(const FleetParts& fleet, const ReportQuery& query, std::vector<std::string>* notices);
std::string RenderFleetJson(const FleetParts& fleet, const ReportQuery& query);
std::string RenderFleetHtml(const FleetParts& fleet, const ReportQuery& query);

}  // namespace gpuscaler::report::internal
