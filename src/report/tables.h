// Report tables as cells, shared by the CSV, JSON and HTML renderers, and
// the text helpers they use. Private to src/report.
#pragma once

#include "gpuscaler/model/escape.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/report/cost_model.h"

namespace gpuscaler::report::internal {

struct Cell {
  std::string text;             // as printed in CSV and HTML
  std::optional<double> number;  // numeric cells: the value JSON prints and HTML sorts by
};

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

std::string FormatCents(int64_t cents);     // "1234.56", "-0.05"
std::string FormatFixed(double v, int decimals);  // no "-0.000"
std::string FormatDate(WallTime t);          // "2026-11-01"
std::string CsvField(std::string_view text);  // RFC 4180 quoting when needed

std::string RenderCsv(const Table& table);
std::string RenderFocusCsv(const CostFacts& facts, const ReportQuery& query);
std::string RenderJson(const CostFacts& facts, const ReportViews& views, const ReportQuery& query);
std::string RenderHtml(const CostFacts& facts, const ReportViews& views, const ReportQuery& query);

}  // namespace gpuscaler::report::internal
