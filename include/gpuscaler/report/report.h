// Cost reports for finance, read only from the audit store (the daemon's or
// the simulator's SQLite file): what the fleet cost, who used it, what spot
// saved, how the month's budget burns. The rules (billing, attribution,
// idle, views, columns, formats) are in docs/reports.md.
//
// One entry point for both front ends: `gpuscaler report` builds a
// ReportQuery from its flags, the daemon's `/reports/...` handler from URL
// parameters (ParseReportQuery: the same names and the same validation), and
// both call RenderReport.
//
// Thread-safety: free functions on values; RenderReport opens its own two
// read-only connections (it splits the usage scan over two threads), so
// concurrent calls are safe and never block the daemon's writer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {
class AuditReader;
}

namespace gpuscaler::report {

// The columns a report can be grouped by. Pool, region, zone, instance type
// and capacity type come from the node; class and team from the usage it
// carried (its idle share has class and team "__idle__"); cluster from the
// audit store (a fleet report's column, see RenderFleetReport).
enum class Dimension { kPool, kRegion, kZone, kInstanceType, kCapacityType, kClass, kTeam, kCluster };
// Time buckets, UTC: calendar days, ISO weeks (from Monday), calendar months.
enum class Period { kDay, kWeek, kMonth };
enum class Format { kCsv, kJson, kFocus, kHtml };
// The table a CSV holds (JSON and HTML hold all of them; FOCUS is its own).
enum class View {
  kCosts,
  kAllocation,
  kSavings,
  kBudget,
  kDecisions,
  kNodes,
  kPredictions,
  kPredictionSummary,
  kReservations,
  kBuyBlock,
};

std::string_view ToString(Dimension d);  // "pool", "region", "zone", "instance_type", "capacity_type",
                                         // "class", "team", "cluster"
std::string_view ToString(Period p);     // "day", "week", "month"
std::string_view ToString(Format f);     // "csv", "json", "focus", "html"
std::string_view ToString(View v);       // "costs", "allocation", "savings", "budget", "decisions", "nodes",
                                         // "predictions", "prediction_summary", "reservations", "buy_block"

// The class and team names of unattributed cost (OpenCost's names).
inline constexpr std::string_view kIdle = "__idle__";
inline constexpr std::string_view kUnallocated = "__unallocated__";

struct ReportQuery {
  // The audit database. Never taken from URL parameters: the daemon sets its
  // own; the CLI from --db.
  std::string db_path;
  // The run to report (its name, or its id in decimal). Empty: the
  // database's only run; a database with several runs then needs `run` or
  // `all_runs` (RenderReport fails with kInvalidInput listing them).
  std::string run;
  bool all_runs = false;
  WallTime from{};  // inclusive
  WallTime to{};    // exclusive; from < to
  // false: RenderReport picks the bound: the selected runs' whole life, or,
  // when one of them is a daemon run, the calendar month (UTC) of `now`.
  bool from_given = true;
  bool to_given = true;
  // "Now" for the daemon default above; unset: the database's last record.
  std::optional<WallTime> now;
  std::vector<Dimension> group_by;  // empty: totals per period only
  Period period = Period::kDay;
  Format format = Format::kCsv;
  View view = View::kCosts;
  // Workload class -> team, for usage recorded without a team. Usage with
  // neither lands in team "__unallocated__".
  std::map<std::string, std::string> team_map;
  // Monthly budget cap (USD) for the burn-down; unset: actuals and forecast
  // only (the store does not keep the policy's caps).
  std::optional<double> budget_monthly_usd;
  // Running nodes are billed up to here. Unset: the last time the database
  // records anything (it knows nothing later).
  std::optional<WallTime> as_of;
  // Estimate the usage of nodes running at as_of since their last recorded
  // interval (docs/reports.md, "Usage up to the report's moment"). Set by
  // RenderReport when a selected run has not ended (a live daemon): an
  // ended run wrote all its usage at its end.
  bool estimate_unrecorded_usage = false;
  // Minimum billed time per instance (EC2 Linux and the simulated cloud: 60 s).
  Seconds min_billed{60};
  // GPU-hours lost to an interruption are the ones the store recorded for
  // it (LostWorkRecord); for a node without a record (a store older than
  // schema version 6, a run whose work source does not measure losses),
  // the work allocated on the node in this window before it was reclaimed
  // (half the default 30-minute checkpoint interval: the expected work
  // since the last checkpoint).
  Seconds loss_window{900};
  int top = 20;  // rows in the top decisions, top nodes and worst predictions tables
  // The "should we buy a block?" what-if (view buy_block; docs/reports.md):
  // a Capacity Block of `block_count` instances of `block_type` held over
  // the whole range for `block_upfront_usd`, against what the recorded
  // on-demand and spot instances of that type cost. All three or none.
  std::string block_type;
  int block_count = 0;
  std::optional<double> block_upfront_usd;
  // FOCUS identity columns. Empty account name: the account id. Empty
  // provider and service names: each node's run's cloud (docs/reports.md);
  // given, they name every row.
  std::string billing_account_id = "gpuscaler";
  std::string billing_account_name;
  std::string provider_name;
  std::string service_name;
};

// Builds a query from named text parameters (URL query parameters, or the
// CLI's flags with dashes as underscores): from, to (YYYY-MM-DD or RFC 3339),
// group_by (comma list), period, format, view, team_map ("class=team,..."),
// budget_monthly_usd, as_of, min_billed_seconds, loss_window_seconds, top,
// billing_account_id, billing_account_name, provider_name, service_name,
// run (name or id), all_runs (true|false), block_type, block_count,
// block_upfront_usd (all three or none; view buy_block needs them). from and to may be left out (see
// from_given). Any problem (unknown parameter or column, bad value, from >=
// to, run with all_runs): kInvalidInput with a message naming it. db_path is
// left empty.
Result<ReportQuery> ParseReportQuery(const std::map<std::string, std::string>& params);

struct RenderedReport {
  std::string content_type;  // "text/csv; charset=utf-8", "application/json", "text/html; charset=utf-8"
  std::string body;
  // What the report covers: the run(s) and the range, with how the range was
  // chosen; also in the JSON's and the HTML's header.
  std::string scope;
  // For the operator (stderr), e.g. a range holding no data.
  std::vector<std::string> notices;
  // The range holds no data and lies wholly outside the time the selected
  // runs have records for (a mistyped or stale window, not a quiet one):
  // the CLI still writes the (zero) report but exits 3 (docs/reports.md).
  bool range_outside_data = false;
};

// What a report covers once the database is read: the selected run (none:
// all runs), the range (defaults filled in) and a one-line description.
struct ReportScope {
  std::optional<int64_t> run_id;
  WallTime from{};
  WallTime to{};
  std::string description;
  // When the selected runs have records at all: from the earliest run's
  // start to the latest record (or run end), both inclusive.
  std::optional<WallTime> data_from;
  std::optional<WallTime> data_to;
  // A selected run has not ended (or the database names no runs).
  bool live = false;
  // The selected runs (all runs: every one), by id.
  std::vector<RunRow> runs;
};

// Resolves query.run / all_runs and the default range against the
// database's runs, and selects the run on `reader`. kInvalidInput: no such
// run, a name shared by several runs, several runs and neither run nor
// all_runs (the message lists the runs: name, id, source, started, ended),
// an empty range.
Result<ReportScope> ResolveScope(AuditReader& reader, const ReportQuery& query);

// Reads query.db_path (read-only) and renders the report. Missing file:
// kNotFound; not an audit database or a schema this binary does not read:
// kConfig; bad query: kInvalidInput; SQLite trouble: kTransient/kInternal.
// A query grouped by cluster is the fleet report of this one store
// (RenderFleetReport).
Result<RenderedReport> RenderReport(const ReportQuery& query);
// The same on an open reader (tests, an in-memory store); db_path unused.
// A query grouped by cluster: kInvalidInput (a fleet report opens its stores).
Result<RenderedReport> RenderReport(AuditReader& reader, const ReportQuery& query);

// ---- Fleet reports (docs/reports.md, "Fleet reports") ----------------------

// One audit store of a fleet report and the cluster it stands for.
struct FleetStore {
  std::string db_path;
  // Empty: ClusterNameOf the store.
  std::string cluster;
};

// The cluster an audit store belongs to, when not given: the name of the
// reader's selected run when a daemon named it (a database several clusters
// share), else of its daemon runs (the daemon names its runs after its
// config's cluster_name; of several names, the latest run's), else, for a
// store holding no named daemon run (the simulator's, a daemon without
// cluster_name), the file's stem ("prod-east" for
// /var/lib/gpuscaler/prod-east.db) or the PostgreSQL URL's database.
Result<std::string> ClusterNameOf(AuditReader& reader, const std::string& db_path);

// The stores named by the CLI's --db arguments, in order: "PATH", or
// "NAME=PATH" (cluster NAME, overriding ClusterNameOf), or a directory: every
// audit store directly in it, by file name (a file that is not an SQLite
// database, or one without an audit schema, is skipped with a line in
// `skipped`; a directory holding none is kNotFound). Missing path: kNotFound.
Result<std::vector<FleetStore>> ExpandFleetArguments(const std::vector<std::string>& args,
                                                     std::vector<std::string>* skipped);

// Renders one report over several audit stores, each a cluster: every store
// opened read-only and reported by RenderReport's own code with the same
// query (one range for all: as given, else the union of the stores' default
// ranges), up to `parallelism` stores at a time (0: the machine's cores), and
// the results joined: every view gets a `cluster` column (where `cluster`
// stands in query.group_by, else first of the group columns), FOCUS rows
// SubAccountId/SubAccountName and a `gpuscaler.io/cluster` tag, and the
// totals are the sums of the stores' totals in cents, so the fleet adds up
// to its clusters' single reports to the cent. The bytes do not depend on
// `parallelism`. Errors name the store's file: any store failing fails the
// report (no partial totals); two stores with one cluster name:
// kInvalidInput naming both files.
Result<RenderedReport> RenderFleetReport(const std::vector<FleetStore>& stores, const ReportQuery& query,
                                         int parallelism = 0);

}  // namespace gpuscaler::report
