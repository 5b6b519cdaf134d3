// `gpuscaler sim (--scenario NAME | --trace FILE --trace-format FORMAT) [--prices FILE --prices-format FORMAT]
//  [--catalog FILE] [--policy FILE] [--baseline NAME | --runs NAMES | --compare] [--forecast learned|oracle]
//  [--deadline-bound] [--seed N] [--days N] [--json] [--db FILE] [--timeseries FILE]`: replays load through the
// production controller on a simulated cloud (docs/simulator.md).
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
#include "sim_deadline_bound.h"
#include "sim_inputs.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/database_url.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/baselines.h"
#include "sim/deadline_bound.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::cli {
namespace {

struct SimOptions {
  SimInputs in;
  std::string policy_file;
  std::string baseline;
  std::string runs;  // comma-separated run names
  bool compare = false;
  bool deadline_bound = false;
  bool json = false;
  std::string db_file;
  std::string timeseries_file;
  std::string snapshot_at;   // a duration from the start ("36h") or an RFC 3339 time
  std::string snapshot_out;
};

int SimFail(const std::string& message, int code) { return FailCommand("gpuscaler sim", message, code); }

// Replays the scenario with the planner up to the first tick at or after
// --snapshot-at and writes the snapshot that tick planned from, for
// `gpuscaler explain` (docs/snapshot.md).
int ExportSnapshot(const SimOptions& o, const sim::Scenario& scenario) {
  if (o.snapshot_at.empty() || o.snapshot_out.empty())
    return SimFail("--snapshot-at and --snapshot-out go together", 2);
  WallTime at{};
  Seconds offset{};
  if (ParseRfc3339(o.snapshot_at, &at)) {
  } else if (ParseDuration(o.snapshot_at, &offset)) {
    at = scenario.start + offset;
  } else {
    return SimFail(
        "--snapshot-at '" + o.snapshot_at + "': give a duration from the start (36h) or an RFC 3339 time", 2);
  }
  if (at < scenario.start || at >= scenario.start + scenario.horizon)
    return SimFail("--snapshot-at " + FormatRfc3339(at) + " is outside the replay [" +
                       FormatRfc3339(scenario.start) + ", " +
                       FormatRfc3339(scenario.start + scenario.horizon) + ")",
                   2);
  Result<sim::RunSpec> spec = sim::MakeRunSpec("gpuscaler", scenario, nullptr);
  if (!spec) return SimFail(spec.error().message(), 2);
  sim::Replay replay(scenario, std::move(spec).value());
  while (!replay.done()) {
    if (replay.Step() && replay.now() >= at) break;
  }
  std::ofstream out(o.snapshot_out, std::ios::binary);
  out << FormatSnapshotJson(replay.controller().snapshot());
  if (!out) return SimFail("cannot write " + o.snapshot_out, 1);
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

// The runs to replay, in order: --runs, --baseline, or with --compare
// gpuscaler, the runs the policy's features add and every baseline.
Result<std::vector<std::string>> SelectRuns(const SimOptions& o, const sim::Scenario& scenario) {
  std::vector<std::string> names;
  if (!o.runs.empty()) {
    size_t from = 0;
    while (from <= o.runs.size()) {
      const size_t comma = std::min(o.runs.find(',', from), o.runs.size());
      const std::string name = o.runs.substr(from, comma - from);
      if (name.empty()) return Error::InvalidInput("--runs '" + o.runs + "': an empty run name");
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      from = comma + 1;
    }
    return names;
  }
  if (!o.compare) {
    names.push_back(o.baseline.empty() ? "gpuscaler" : o.baseline);
    return names;
  }
  names.push_back("gpuscaler");
  if (std::any_of(scenario.policy.classes.begin(), scenario.policy.classes.end(),
                  [](const WorkloadClassPolicy& c) { return c.deadline.has_value(); }))
    names.push_back("gpuscaler-held");
  if (sim::PlansAhead(scenario.policy)) names.push_back("gpuscaler-reactive");
  if (sim::HasForecasts(scenario.policy)) names.push_back("gpuscaler-oracle");
  for (const std::string& b : sim::BaselineNames()) names.push_back(b);
  return names;
}

int RunSim(const SimOptions& o) {
  const SimInputs& in = o.in;
  if (in.scenario.empty() == in.trace_file.empty())
    return SimFail("give exactly one of --scenario or --trace", 2);
  if (!in.trace_file.empty() && in.trace_format.empty()) return SimFail("--trace needs --trace-format", 2);
  if (in.prices_file.empty() != in.prices_format.empty())
    return SimFail("--prices and --prices-format go together", 2);
  if (o.compare && !o.baseline.empty()) return SimFail("--baseline and --compare exclude each other", 2);
  if (!o.runs.empty() && (o.compare || !o.baseline.empty()))
    return SimFail("--runs excludes --baseline and --compare", 2);

  std::string catalog_source;
  Result<Catalog> catalog = LoadSimCatalog(in, &catalog_source);
  if (!catalog) return SimFail(catalog.error().message(), 2);

  std::optional<Policy> policy;
  if (!o.policy_file.empty()) {
    PolicyLoadResult loaded = LoadPolicyFile(o.policy_file, &*catalog);
    if (!loaded.ok()) {
      for (const ConfigProblem& p : loaded.problems) std::cerr << p.ToString() << "\n";
      return 2;
    }
    policy = std::move(loaded.policy);
  }

  std::vector<std::string> warnings;
  Result<sim::Scenario> built = BuildSimScenario(in, *catalog, catalog_source, policy, o.policy_file, &warnings);
  for (const std::string& w : warnings) std::cerr << "gpuscaler sim: " << w << "\n";
  if (!built) return SimFail(built.error().message(), 2);
  sim::Scenario scenario = std::move(built).value();
  if (scenario.forecast == sim::ForecastSource::kOracle && !sim::HasForecasts(scenario.policy)) {
    return SimFail("--forecast oracle: policy '" + scenario.policy.name + "' (" + scenario.policy_source +
                       ") has no class with a demand forecast (classes[].forecast)",
                   2);
  }

  if (!o.snapshot_at.empty() || !o.snapshot_out.empty()) {
    if (o.deadline_bound) return SimFail("--deadline-bound and --snapshot-at exclude each other", 2);
    return ExportSnapshot(o, scenario);
  }

  // Priced before any replay, so a scenario it cannot price fails at once.
  std::optional<sim::DeadlineBound> bound;
  if (o.deadline_bound) {
    if (sim::ClassDeadlines(scenario.policy).empty()) {
      return SimFail("--deadline-bound: policy '" + scenario.policy.name + "' (" + scenario.policy_source +
                         ") has no class with a deadline (classes[].deadline)",
                     2);
    }
    Result<sim::DeadlineBound> priced = sim::BoundDeadlines(scenario);
    if (!priced) return SimFail("--deadline-bound: " + priced.error().message(), 2);
    bound = std::move(priced).value();
  }

  Result<std::vector<std::string>> selected = SelectRuns(o, scenario);
  if (!selected) return SimFail(selected.error().message(), 2);
  std::vector<std::string> names = std::move(selected).value();
  // The bound is set against the same work run at once.
  if (bound && std::find(names.begin(), names.end(), kAtOnceRun) == names.end()) {
    names.emplace_back(kAtOnceRun);
  }

  std::unique_ptr<SqliteAuditStore> store;
  if (!o.db_file.empty()) {
    SqliteAuditStoreOptions so;
    so.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick;
    so.group_commit_ticks = 64;
    Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open(o.db_file, so);
    if (!opened) return SimFail(opened.error().ToString(), 1);
    store = std::move(opened).value();
    // Each policy and baseline is recorded as its own run, named after it
    // (on-demand always runs: savings are measured against it). A second
    // replay under a name the file holds would reuse its instance ids.
    if (Status s = CheckRunNamesFree(*store, names, RedactDatabaseUrl(o.db_file)); !s.ok())
      return SimFail(s.error().message(), 2);
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
  if (!results) return SimFail(results.error().message(), 2);
  if (store) {
    Status flushed = store->Flush();
    if (!flushed.ok()) return SimFail("writing " + RedactDatabaseUrl(o.db_file) + ": " + flushed.error().ToString(), 1);
  }

  std::optional<sim::BoundComparison> compared;
  if (bound) {
    Result<sim::BoundComparison> measured = MeasureBound(scenario, *bound, *results, run.progress);
    if (!measured) {
      return SimFail("--deadline-bound: " + measured.error().ToString(),
                     measured.error().category() == ErrorCategory::kInvalidInput ? 2 : 1);
    }
    compared = std::move(measured).value();
  }
  const sim::BoundComparison* with_bound = compared ? &*compared : nullptr;
  if (o.json) {
    std::cout << sim::FormatJson(scenario, *results, with_bound);
  } else {
    std::cout << sim::FormatSummaryTable(scenario, *results, with_bound);
  }
  if (!o.timeseries_file.empty()) {
    std::ofstream out(o.timeseries_file, std::ios::binary);
    out << sim::FormatTimeseriesCsv(*results);
    if (!out) return SimFail("cannot write " + o.timeseries_file, 1);
  }
  return 0;
}

}  // namespace

void RegisterSimCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SimOptions>();
  CLI::App* sim = app.add_subcommand(
      "sim", "Replay load through the controller on a simulated cloud: cost, queue wait and interruptions "
             "for a policy and the baselines (docs/simulator.md)");
  sim->add_option("--scenario", o->in.scenario, "Built-in scenario: demo, scale-30d-100k");
  sim->add_option("--trace", o->in.trace_file, "Job or demand trace file");
  sim->add_option("--trace-format", o->in.trace_format, "Trace format (docs/traces.md), e.g. gpuscaler-jobs");
  sim->add_option("--prices", o->in.prices_file, "Spot market file: prices, availability or interruption events");
  sim->add_option("--prices-format", o->in.prices_format, "Spot market format, e.g. aws-spot-price-history");
  sim->add_option("--catalog", o->in.catalog_file,
                  "Instance catalog; default config/catalogs/aws.yaml if found, else a built-in one");
  sim->add_option("--policy", o->policy_file, "Policy file; default: the scenario's (built-in demo policy)");
  sim->add_option("--baseline", o->baseline,
                  "Run this instead of the planner: on-demand, static-peak, karpenter, greedy, cluster-autoscaler, "
                  "gpuscaler-reactive (the policy without its scaling schedules, demand forecasts, warm capacity and "
                  "deadlines), "
                  "gpuscaler-held (deadline work held for spot by its slack, never moved), gpuscaler-oracle (the "
                  "policy with every demand forecast from the trace's true future demand)");
  sim->add_option("--runs", o->runs,
                  "Run these, comma-separated, instead of the planner alone: gpuscaler and any --baseline name "
                  "(on-demand always runs too), e.g. gpuscaler,gpuscaler-reactive,gpuscaler-oracle");
  sim->add_flag("--compare", o->compare,
                "Run the planner and every baseline side by side (and gpuscaler-reactive when the policy has "
                "scaling schedules, demand forecasts, warm capacity or deadlines; gpuscaler-held when it has deadlines; "
                "gpuscaler-oracle when it has demand forecasts)");
  sim->add_option("--forecast", o->in.forecast,
                  "Where the demand forecasts (classes[].forecast) come from: learned (from the demand the replay "
                  "has shown so far, as the daemon does; default) or oracle (the trace's true future demand: the "
                  "best any forecast could know)");
  sim->add_flag("--deadline-bound", o->deadline_bound,
                "For a policy with class deadlines: also price the offline bound on the cost of meeting every "
                "meetable deadline, replay gpuscaler-reactive (the same work at once) with its jobs labelled by "
                "deadline to split its bill, and print the bound and each run's share of the most any schedule "
                "could save (docs/simulator.md)");
  sim->add_option("--seed", o->in.seed, "Random seed (default 1)");
  sim->add_option("--runtime-knowledge", o->in.runtime_knowledge,
                  "What the planner knows of a job's runtime: class (its class's shape.expected_runtime, as "
                  "the daemon knows it; default) or exact (what is left of its real duration: for studies of "
                  "what knowing it would be worth)");
  sim->add_option("--multi-node", o->in.multi_node,
                  "philly-jobs: a job on N machines becomes a gang of N jobs started and stopped together (gang, "
                  "the default), N independent jobs (split), or one job (whole)");
  sim->add_option("--days", o->in.days, "Length of the replay in days (default: the scenario's)");
  sim->add_flag("--json", o->json, "Print JSON instead of the table");
  sim->add_option("--db", o->db_file, "Write the audit store here, for gpuscaler report: a SQLite file or a postgresql:// URL");
  sim->add_option("--timeseries", o->timeseries_file, "Write a per-tick CSV here");
  sim->add_option("--snapshot-at", o->snapshot_at,
                  "Export the planner's input at this time (duration from the start, e.g. 36h, or RFC 3339)");
  sim->add_option("--cbl-instance-types", o->in.cbl_instance_types,
                  "cbl-availability: instance type of columns named only by zone (default p3.2xlarge), then "
                  "other types whose spot capacity follows them, comma-separated");
  sim->add_option("--cbl-nodes-when-up", o->in.cbl_nodes_when_up,
                  "cbl-availability: spot nodes per zone and type while a probe is up (default: the count in "
                  "the file, 1 for 1-node probes)");
  sim->add_option("--reservations", o->in.reservations_file,
                  "Reservations file: ODCRs and Capacity Blocks the simulated cloud holds, for pools[].reservations "
                  "to select (docs/simulator.md)");
  sim->add_option("--snapshot-out", o->snapshot_out, "File for --snapshot-at (JSON, docs/snapshot.md)");
  RegisterSweepCommands(*sim, exit_code);
  sim->callback([o, sim, exit_code] {
    if (!sim->get_subcommands().empty()) return;  // sweep or merge ran instead
    *exit_code = RunSim(*o);
  });
}

}  // namespace gpuscaler::cli
