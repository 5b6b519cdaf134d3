// `gpuscaler report --db FILE|NAME=FILE|DIR [--db ...] [--parallel N] [--run NAME|ID | --all-runs]
//  [--from DATE] [--to DATE] [--group-by COLS] [--period day|week|month]
//  [--format csv|json|focus|html] [--view VIEW] [--team-map class=team,...] [--budget-monthly-usd N]
//  [--as-of TIME] [-o FILE] ...`: cost reports from the audit store (docs/reports.md). The flags are
// the daemon's /reports URL parameters with dashes; both go through report::ParseReportQuery. Several
// --db (or a directory, or NAME=FILE) make a fleet report, one cluster per store (report::RenderFleetReport).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuscaler/store/database_url.h"
#include "gpuscaler/report/report.h"

namespace gpuscaler::cli {
namespace {

struct Flag {
  const char* name;  // the query parameter; the flag is --name with dashes
  const char* help;
  std::string value;
  CLI::Option* option = nullptr;
};

int ExitCodeFor(const Error& e) {
  switch (e.category()) {
    case ErrorCategory::kInvalidInput:
    case ErrorCategory::kNotFound:
    case ErrorCategory::kConfig:
      return 2;
    default:
      return 1;
  }
}

// The report was written, but its range lies wholly outside the data (the
// stderr warning names both): a script asking for last month of a database
// that stopped in July should notice, unlike one asking for a quiet day.
constexpr int kRangeOutsideData = 3;

}  // namespace

void RegisterReportCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("report", "Cost reports from the audit store: CSV, JSON, FinOps FOCUS CSV, HTML");
  auto dbs = std::make_shared<std::vector<std::string>>();
  auto parallel = std::make_shared<int>(0);
  auto output = std::make_shared<std::string>();
  auto flags = std::make_shared<std::vector<Flag>>(std::vector<Flag>{
      {"run", "The run to report, by name or id (needed when the database holds several)", {}},
      {"from", "Start, inclusive: YYYY-MM-DD or RFC 3339 (UTC); default: the run's start (daemon: month start)", {}},
      {"to", "End, exclusive: YYYY-MM-DD or RFC 3339 (UTC); default: the run's end (daemon: month end)", {}},
      {"group_by",
       "Comma list of: pool, region, zone, instance_type, capacity_type, class, team, cluster",
       {}},
      {"period", "Time buckets: day (default), week (ISO, from Monday) or month", {}},
      {"format", "csv (default), json, focus (FinOps FOCUS 1.2 CSV) or html", {}},
      {"view",
       "The CSV's table: costs (default), allocation, savings, budget, decisions, nodes, predictions, "
       "prediction_summary, reservations, buy_block",
       {}},
      {"team_map", "class=team,... for usage recorded without a team", {}},
      {"budget_monthly_usd", "Monthly budget cap for the burn-down", {}},
      {"as_of", "Bill running nodes up to this time (default: the database's last record)", {}},
      {"min_billed_seconds", "Minimum billed time per instance (default 60)", {}},
      {"loss_window_seconds",
       "Work counted as lost before an interruption the store has no recorded figure for (default 900)", {}},
      {"top", "Rows in the top decisions, top nodes and worst predictions tables (default 20)", {}},
      {"billing_account_id", "FOCUS BillingAccountId (default gpuscaler)", {}},
      {"billing_account_name", "FOCUS BillingAccountName (default: the billing account id)", {}},
      {"provider_name", "FOCUS ProviderName, PublisherName, InvoiceIssuerName (default: each run's cloud)", {}},
      {"service_name", "FOCUS ServiceName (default: each run's cloud's compute service)", {}},
      {"block_type", "buy_block view: the instance type of the Capacity Block considered (e.g. p5.48xlarge)", {}},
      {"block_count", "buy_block view: the block's instances", {}},
      {"block_upfront_usd", "buy_block view: the block's fee for the whole range (USD)", {}},
  });
  cmd->add_option(
         "--db", *dbs,
         "Audit database written by the daemon or `gpuscaler sim --db`: a SQLite file or a postgresql:// URL "
         "(password from PGPASSWORD or PGPASSFILE); repeat it, give NAME=FILE or a directory of files for a fleet "
         "report with a cluster column")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--parallel", *parallel, "Fleet reports: audit stores read at a time (default: the cores)")
      ->check(CLI::PositiveNumber);
  for (Flag& f : *flags) {
    std::string flag = std::string("--") + f.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    f.option = cmd->add_option(flag, f.value, f.help);
  }
  auto all_runs = std::make_shared<bool>(false);
  cmd->add_flag("--all-runs", *all_runs, "Report every run of the database together");
  cmd->add_option("-o,--output", *output, "Write here instead of standard output");
  cmd->callback([dbs, parallel, output, flags, all_runs, exit_code] {
    std::map<std::string, std::string> params;
    for (const Flag& f : *flags) {
      if (f.option->count() > 0) params[f.name] = f.value;
    }
    if (*all_runs) params["all_runs"] = "true";
    Result<report::ReportQuery> query = report::ParseReportQuery(params);
    if (!query) {
      std::cerr << "gpuscaler report: " << query.error().message() << "\n";
      *exit_code = 2;
      return;
    }
    query->now = std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now());
    // One plain file: the single-store report. Several, a directory or a
    // named store: the fleet's.
    std::error_code ec;
    const bool fleet = dbs->size() > 1 || std::filesystem::is_directory(dbs->front(), ec) ||
                       (dbs->front().find('=') != std::string::npos && !IsPostgresUrl(dbs->front()) &&
                        !std::filesystem::exists(dbs->front(), ec));
    Result<report::RenderedReport> rendered = Error::Internal("no report");
    if (fleet) {
      std::vector<std::string> skipped;
      Result<std::vector<report::FleetStore>> stores = report::ExpandFleetArguments(*dbs, &skipped);
      for (const std::string& s : skipped) std::cerr << "gpuscaler report: skipped " << s << "\n";
      rendered = stores ? report::RenderFleetReport(*stores, *query, *parallel)
                        : Result<report::RenderedReport>(stores.error());
    } else {
      query->db_path = dbs->front();
      rendered = report::RenderReport(*query);
    }
    if (!rendered) {
      std::cerr << "gpuscaler report: " << rendered.error().message() << "\n";
      *exit_code = ExitCodeFor(rendered.error());
      return;
    }
    // CSV has no header to name the scope in: say it on stderr.
    if (query->format == report::Format::kCsv || query->format == report::Format::kFocus) {
      std::cerr << "gpuscaler report: covers " << rendered->scope << "\n";
    }
    for (const std::string& notice : rendered->notices) std::cerr << "gpuscaler report: " << notice << "\n";
    if (output->empty()) {
      std::cout << rendered->body;
      std::cout.flush();
      *exit_code = !std::cout ? 1 : rendered->range_outside_data ? kRangeOutsideData : 0;
      return;
    }
    std::ofstream file(*output, std::ios::binary | std::ios::trunc);
    file << rendered->body;
    file.close();
    if (!file) {
      std::cerr << "gpuscaler report: cannot write " << *output << "\n";
      *exit_code = 1;
      return;
    }
    *exit_code = rendered->range_outside_data ? kRangeOutsideData : 0;
  });
}

}  // namespace gpuscaler::cli
