// `gpuscaler sim (--scenario NAME | --trace FILE --trace-format FORMAT) [--prices FILE --prices-format FORMAT]
//  [--catalog FILE] [--policy FILE] [--baseline NAME | --compare] [--seed N] [--days N] [--json] [--db FILE]
//  [--timeseries FILE]`: replays load through the production controller on a simulated cloud
// (docs/simulator.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/baselines.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/trace_readers.h"

namespace gpuscaler::cli {
namespace {

struct SimOptions {
  std::string scenario;
  std::string trace_file;
  std::string trace_format;
  std::string prices_file;
  std::string prices_format;
  std::string catalog_file;
  std::string policy_file;
  std::string baseline;
  bool compare = false;
  uint64_t seed = 1;
  int days = 0;
  bool json = false;
  std::string db_file;
  std::string timeseries_file;
  std::string snapshot_at;   // a duration from the start ("36h") or an RFC 3339 time
  std::string snapshot_out;
  std::string cbl_instance_types;  // cbl-availability: "type[,also,...]"
  int cbl_nodes_when_up = 0;       // cbl-availability: 0 keeps the source count
};

int Fail(const std::string& message, int code) {
  std::cerr << "gpuscaler sim: " << message << "\n";
  return code;
}

// Replays the scenario with the planner up to the first tick at or after
// --snapshot-at and writes the snapshot that tick planned from, for
// `gpuscaler explain` (docs/snapshot.md).
int ExportSnapshot(const SimOptions& o, const sim::Scenario& scenario) {
  if (o.snapshot_at.empty() || o.snapshot_out.empty()) return Fail("--snapshot-at and --snapshot-out go together", 2);
  WallTime at{};
  Seconds offset{};
  if (ParseRfc3339(o.snapshot_at, &at)) {
  } else if (ParseDuration(o.snapshot_at, &offset)) {
    at = scenario.start + offset;
  } else {
    return Fail("--snapshot-at '" + o.snapshot_at + "': give a duration from the start (36h) or an RFC 3339 time", 2);
  }
  if (at < scenario.start || at >= scenario.start + scenario.horizon)
    return Fail("--snapshot-at " + FormatRfc3339(at) + " is outside the replay [" + FormatRfc3339(scenario.start) +
                    ", " + FormatRfc3339(scenario.start + scenario.horizon) + ")",
                2);
  Result<sim::RunSpec> spec = sim::MakeRunSpec("gpuscaler", scenario, nullptr);
  if (!spec) return Fail(spec.error().message(), 2);
  sim::Replay replay(scenario, std::move(spec).value());
  while (!replay.done()) {
    if (replay.Step() && replay.now() >= at) break;
  }
  std::ofstream out(o.snapshot_out, std::ios::binary);
  out << FormatSnapshotJson(replay.controller().snapshot());
  if (!out) return Fail("cannot write " + o.snapshot_out, 1);
  std::cerr << "gpuscaler sim: wrote the snapshot of the tick at " << FormatRfc3339(replay.now()) << " to "
            << o.snapshot_out << " (replay it: gpuscaler explain --snapshot " << o.snapshot_out << " --policy ...)\n";
  return 0;
}

Status CheckRunNamesFree(SqliteAuditStore& store, std::vector<std::string> names, const std::string& db_file) {
  names.push_back("on-demand");
  Result<std::unique_ptr<AuditReader>> reader = store.OpenReader();
  if (!reader) return reader.error();
  Result<std::vector<RunRow>> runs = (*reader)->Runs();
  if (!runs) return runs.error();
  for (const RunRow& r : *runs) {
    if (std::find(names.begin(), names.end(), r.run.name) == names.end()) continue;
    return Error::InvalidInput(db_file + " already holds a run named '" + r.run.name + "' (id " +
                               std::to_string(r.id) + ", " + r.run.source + ", started " +
                               FormatRfc3339(r.run.started) + "): write this replay to another --db file");
  }
  return Status::Ok();
}

int RunSim(const SimOptions& o) {
  if (o.scenario.empty() == o.trace_file.empty()) return Fail("give exactly one of --scenario or --trace", 2);
  if (!o.trace_file.empty() && o.trace_format.empty()) return Fail("--trace needs --trace-format", 2);
  if (o.prices_file.empty() != o.prices_format.empty()) return Fail("--prices and --prices-format go together", 2);
  if (o.compare && !o.baseline.empty()) return Fail("--baseline and --compare exclude each other", 2);
  const std::optional<int> days = o.days > 0 ? std::optional<int>(o.days) : std::nullopt;

  Catalog catalog;
  std::string catalog_source;
  if (!o.catalog_file.empty()) {
    Result<Catalog> loaded = LoadCatalogFile(o.catalog_file);
    if (!loaded) return Fail(loaded.error().message(), 2);
    catalog = std::move(loaded).value();
    catalog_source = o.catalog_file;
  } else {
    catalog = DefaultCatalog("", &catalog_source);
  }

  std::optional<Policy> policy;
  if (!o.policy_file.empty()) {
    PolicyLoadResult loaded = LoadPolicyFile(o.policy_file, &catalog);
    if (!loaded.ok()) {
      for (const ConfigProblem& p : loaded.problems) std::cerr << p.ToString() << "\n";
      return 2;
    }
    policy = std::move(loaded.policy);
  }

  sim::Scenario scenario;
  if (!o.scenario.empty()) {
    Result<sim::Scenario> s = sim::MakeBuiltinScenario(o.scenario, o.seed, days, catalog);
    if (!s) return Fail(s.error().message(), 2);
    scenario = std::move(s).value();
    if (policy) {
      scenario.policy = *policy;
      scenario.policy_source = o.policy_file;
    }
  } else {
    std::optional<sim::TraceFormat> format = sim::ParseTraceFormat(o.trace_format);
    if (!format) {
      std::string names;
      for (auto n : sim::TraceFormatNames()) names += (names.empty() ? "" : ", ") + std::string(n);
      return Fail("unknown --trace-format '" + o.trace_format + "' (known: " + names + ")", 2);
    }
    Result<sim::Trace> trace = sim::ReadTrace(o.trace_file, *format);
    if (!trace) return Fail(trace.error().message(), 2);
    for (const std::string& w : trace->stats.warnings) std::cerr << "gpuscaler sim: " << w << "\n";
    sim::SpotMarket market;
    if (!o.prices_file.empty()) {
      std::optional<sim::MarketFormat> mf = sim::ParseMarketFormat(o.prices_format);
      if (!mf) {
        std::string names;
        for (auto n : sim::MarketFormatNames()) names += (names.empty() ? "" : ", ") + std::string(n);
        return Fail("unknown --prices-format '" + o.prices_format + "' (known: " + names + ")", 2);
      }
      sim::MarketOptions mo;
      if (!o.cbl_instance_types.empty()) {
        size_t start = 0;
        std::vector<std::string> types;
        while (start <= o.cbl_instance_types.size()) {
          const size_t comma = o.cbl_instance_types.find(',', start);
          const size_t end = comma == std::string::npos ? o.cbl_instance_types.size() : comma;
          if (end > start) types.push_back(o.cbl_instance_types.substr(start, end - start));
          start = end + 1;
        }
        if (types.empty()) return Fail("--cbl-instance-types: give at least one instance type", 2);
        mo.instance_type = types.front();
        mo.also_instance_types.assign(types.begin() + 1, types.end());
      }
      if (o.cbl_nodes_when_up < 0) return Fail("--cbl-nodes-when-up must be >= 0", 2);
      if (o.cbl_nodes_when_up > 0) mo.available_nodes_when_up = o.cbl_nodes_when_up;
      Result<sim::SpotMarket> m = sim::ReadSpotMarket(o.prices_file, *mf, mo);
      if (!m) return Fail(m.error().message(), 2);
      market = std::move(m).value();
    }
    scenario = sim::MakeTraceScenario(std::move(trace).value(), std::move(market), catalog,
                                      policy ? *policy : DefaultPolicy(), o.seed, days);
    if (scenario.trace.jobs.empty()) return Fail(o.trace_file + ": the trace has no jobs to replay", 2);
  }
  scenario.catalog_source = catalog_source;

  if (!o.snapshot_at.empty() || !o.snapshot_out.empty()) return ExportSnapshot(o, scenario);

  std::vector<std::string> names;
  if (o.compare) {
    names.push_back("gpuscaler");
    for (const std::string& b : sim::BaselineNames()) names.push_back(b);
  } else {
    names.push_back(o.baseline.empty() ? "gpuscaler" : o.baseline);
  }

  std::unique_ptr<SqliteAuditStore> store;
  if (!o.db_file.empty()) {
    SqliteAuditStoreOptions so;
    so.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick;
    so.group_commit_ticks = 64;
    Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open(o.db_file, so);
    if (!opened) return Fail(opened.error().ToString(), 1);
    store = std::move(opened).value();
    // Each policy and baseline is recorded as its own run, named after it
    // (on-demand always runs: savings are measured against it). A second
    // replay under a name the file holds would reuse its instance ids.
    if (Status s = CheckRunNamesFree(*store, names, o.db_file); !s.ok()) return Fail(s.error().message(), 2);
  }

  sim::RunOptions run;
  run.store = store.get();
  run.timeseries = !o.timeseries_file.empty();
  if (isatty(STDERR_FILENO)) {
    run.progress = [](double f) {
      const int width = 30;
      const int done = static_cast<int>(f * width);
      std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(static_cast<size_t>(done), '#').c_str(),
                   std::string(static_cast<size_t>(width - done), '.').c_str(), static_cast<int>(f * 100));
      if (f >= 1.0) std::fprintf(stderr, "\r%*s\r", width + 8, "");
      std::fflush(stderr);
    };
  }
  Result<std::vector<sim::RunResult>> results = sim::RunMany(scenario, names, run);
  if (!results) return Fail(results.error().message(), 2);
  if (store) {
    Status flushed = store->Flush();
    if (!flushed.ok()) return Fail("writing " + o.db_file + ": " + flushed.error().ToString(), 1);
  }

  if (o.json) {
    std::cout << sim::FormatJson(scenario, *results);
  } else {
    std::cout << sim::FormatSummaryTable(scenario, *results);
  }
  if (!o.timeseries_file.empty()) {
    std::ofstream out(o.timeseries_file, std::ios::binary);
    out << sim::FormatTimeseriesCsv(*results);
    if (!out) return Fail("cannot write " + o.timeseries_file, 1);
  }
  return 0;
}

}  // namespace

void RegisterSimCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SimOptions>();
  CLI::App* sim = app.add_subcommand(
      "sim", "Replay load through the controller on a simulated cloud: cost, queue wait and interruptions "
             "for a policy and the baselines (docs/simulator.md)");
  sim->add_option("--scenario", o->scenario, "Built-in scenario: demo, scale-30d-100k");
  sim->add_option("--trace", o->trace_file, "Job or demand trace file");
  sim->add_option("--trace-format", o->trace_format, "Trace format (docs/traces.md), e.g. gpuscaler-jobs");
  sim->add_option("--prices", o->prices_file, "Spot market file: prices, availability or interruption events");
  sim->add_option("--prices-format", o->prices_format, "Spot market format, e.g. aws-spot-price-history");
  sim->add_option("--catalog", o->catalog_file,
                  "Instance catalog; default config/catalogs/aws.yaml if found, else a built-in one");
  sim->add_option("--policy", o->policy_file, "Policy file; default: the scenario's (built-in demo policy)");
  sim->add_option("--baseline", o->baseline,
                  "Run this instead of the planner: on-demand, static-peak, karpenter, greedy, cluster-autoscaler");
  sim->add_flag("--compare", o->compare, "Run the planner and every baseline side by side");
  sim->add_option("--seed", o->seed, "Random seed (default 1)");
  sim->add_option("--days", o->days, "Length of the replay in days (default: the scenario's)");
  sim->add_flag("--json", o->json, "Print JSON instead of the table");
  sim->add_option("--db", o->db_file, "Write the audit store (SQLite) here, for gpuscaler report");
  sim->add_option("--timeseries", o->timeseries_file, "Write a per-tick CSV here");
  sim->add_option("--snapshot-at", o->snapshot_at,
                  "Export the planner's input at this time (duration from the start, e.g. 36h, or RFC 3339)");
  sim->add_option("--cbl-instance-types", o->cbl_instance_types,
                  "cbl-availability: instance type of columns named only by zone (default p3.2xlarge), then "
                  "other types whose spot capacity follows them, comma-separated");
  sim->add_option("--cbl-nodes-when-up", o->cbl_nodes_when_up,
                  "cbl-availability: spot nodes per zone and type while a probe is up (default: the count in "
                  "the file, 1 for 1-node probes)");
  sim->add_option("--snapshot-out", o->snapshot_out, "File for --snapshot-at (JSON, docs/snapshot.md)");
  sim->callback([o, exit_code] { *exit_code = RunSim(*o); });
}

}  // namespace gpuscaler::cli
