// deadline_bound: the most that deferring work to its class deadlines could
// save on a replay, against running the same work at once on the same market.
//
//   deadline_bound --trace F --trace-format FMT [--prices F --prices-format FMT
//                  --cbl-instance-types T,.. --cbl-nodes-when-up N]
//                  --catalog F --policy P [--runs NAME,..] [--split-db NEW.db]
//                  [--no-replay]
//
// The inputs are those of `gpuscaler sim` and build the same scenario
// (BuildSimScenario: the simulator's trace, market, catalog and policy
// readers), so the jobs, their deadlines and the prices are the replay's. It
// prints the offline lower bound of sim/deadline_bound.h, then replays
// on-demand and --runs (default gpuscaler-reactive, the at-once yardstick;
// more runs, e.g. gpuscaler, are set against it) and sets the bound against
// the at-once runs (sim::CompareWithBound, as `gpuscaler sim
// --deadline-bound` does). Jobs that cannot meet their deadline run the same
// with or without deferral, so the best deferred cost is an at-once run's
// bill less what it paid for the meetable work, plus the bound. What it paid
// for that work is taken three ways, the larger the more generous to
// deferral:
//  - on-demand for all of it (the cheapest on-demand price per GPU-hour, no
//    idle);
//  - with --split-db: measured. The runs are replayed again with each job's
//    team set to "meetable", "unmeetable" or "no-deadline"
//    (sim::LabelJobsByDeadline), recorded in a new audit store, and their
//    bills attributed by team as `gpuscaler report --group-by team` does;
//    then also with all of the run's idle cost added;
//  - without --split-db: on-demand plus every idle and lost GPU-hour of the
//    run at that price.
// The verdict takes the largest. Exit 0 with the figures; 2 on bad input,
// naming it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/deadline_bound.h"
#include "sim/runner.h"
#include "src/cli/sim_deadline_bound.h"
#include "src/cli/sim_inputs.h"

namespace {

namespace sim = gpuscaler::sim;
using gpuscaler::sim::DeadlineBound;
using gpuscaler::sim::JobTotals;
using TeamCosts = std::map<std::string, std::map<std::string, double>>;  // run -> team -> USD

int Fail(const std::string& message) {
  std::cerr << "deadline_bound: " << message << "\n";
  return 2;
}

double Pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

double CostOf(const std::map<std::string, double>& by_team, std::string_view team) {
  auto it = by_team.find(std::string(team));
  return it == by_team.end() ? 0.0 : it->second;
}

void PrintTotals(const char* name, const JobTotals& t) {
  std::printf(
      "%-12s jobs %6lld  GPU-h %10.1f  bound %11.2f (spot %5.1f %%)  at once %11.2f (spot %5.1f %%)  "
      "on-demand %11.2f\n",
      name, static_cast<long long>(t.jobs), t.gpu_hours, t.deferred_usd,
      Pct(t.deferred_spot_gpu_hours, t.gpu_hours), t.at_once_usd, Pct(t.at_once_spot_gpu_hours, t.gpu_hours),
      t.on_demand_usd);
}

void PrintBound(const sim::Scenario& scenario, const DeadlineBound& b) {
  std::printf("scenario: %s, %zu jobs, horizon %lld s, policy %s, spot notice %lld s\n",
              scenario.description.c_str(), scenario.trace.jobs.size(),
              static_cast<long long>(b.horizon.count()), scenario.policy.name.c_str(),
              static_cast<long long>(b.notice.count()));
  PrintTotals("meetable", b.meetable);
  PrintTotals("unmeetable", b.unmeetable);
  PrintTotals("no deadline", b.no_deadline);
  if (b.jobs_without_gpu > 0 || b.jobs_after_horizon > 0) {
    std::printf("not priced: %lld CPU-only jobs, %lld submitted after the horizon\n",
                static_cast<long long>(b.jobs_without_gpu), static_cast<long long>(b.jobs_after_horizon));
  }
  const double relaxed_saving = b.AtOnceUsd() - b.DeferredUsd();
  std::printf(
      "relaxed model, all priced work: at once %.2f, meetable deferred %.2f: deferral saves %.2f (%.1f %%)\n",
      b.AtOnceUsd(), b.DeferredUsd(), relaxed_saving, Pct(relaxed_saving, b.AtOnceUsd()));
}

// Replays `names` on the labelled scenario into the new store `split_db`
// and returns each run's bill by team; prints each next to its plain run.
// The team is the only job field the replay records per held GPU-second and
// that no class policy reads; the planner groups units by it, so the
// labelled replay is printed next to the plain one to show whether it ran
// the same.
gpuscaler::Result<TeamCosts> ReplaySplit(const sim::Scenario& scenario, const std::vector<std::string>& names,
                                         const std::vector<sim::RunResult>& plain, const std::string& split_db) {
  const sim::Scenario labelled = sim::LabelJobsByDeadline(scenario);
  gpuscaler::SqliteAuditStoreOptions so;
  so.intent_sync = gpuscaler::SqliteAuditStoreOptions::IntentSync::kWithTick;
  so.group_commit_ticks = 64;
  auto store = gpuscaler::SqliteAuditStore::Open(split_db, so);
  if (!store) return store.error().WithContext(split_db);
  sim::RunOptions with_store;
  with_store.store = store->get();
  auto split = sim::RunMany(labelled, names, with_store);
  if (!split) return split.error();
  if (gpuscaler::Status flushed = (*store)->Flush(); !flushed.ok()) return flushed.error().WithContext(split_db);
  TeamCosts out;
  for (size_t i = 0; i < split->size(); ++i) {
    const sim::RunResult& r = (*split)[i];
    auto reader = gpuscaler::AuditReader::Open(split_db);
    if (!reader) return reader.error().WithContext(split_db);
    auto by_team = gpuscaler::cli::CostByTeam(**reader, r.name);
    if (!by_team) return by_team.error().WithContext(split_db);
    std::printf("labelled run %-20s cost %11.2f (plain run %11.2f) =", r.name.c_str(), r.total_cost_usd,
                plain[i].total_cost_usd);
    for (const auto& [team, usd] : *by_team) std::printf(" %s %.2f", team.c_str(), usd);
    std::printf("\n");
    if (std::abs(r.total_cost_usd - plain[i].total_cost_usd) >= 0.005) {
      std::printf("warning: the labelled %s replay ran differently; its split is of that replay\n",
                  r.name.c_str());
    }
    out[r.name] = *by_team;
  }
  return out;
}

// The bound against `at_once`, with its measured split when `split` has it.
sim::BoundComparison Against(const DeadlineBound& b, const sim::RunResult& at_once, const TeamCosts& split) {
  auto measured = split.find(at_once.name);
  if (measured == split.end()) return sim::CompareWithBound(b, at_once, std::nullopt);
  // The labelled replay's bill is the sum of its attributed costs.
  double labelled_usd = 0;
  for (const auto& [team, usd] : measured->second) labelled_usd += usd;
  return sim::CompareWithBound(b, at_once, gpuscaler::cli::SharesOf(measured->second, labelled_usd));
}

// The runs after the yardstick against it, and where their difference lies:
// deferral acts on the meetable work; the rest is the other work and idle
// running differently.
void PrintCaptured(const std::vector<sim::RunResult>& results, const sim::BoundComparison& c,
                   const TeamCosts& split) {
  const sim::RunResult& yardstick = results[1];
  const double most = std::max(0.0, c.Best().saving_usd);
  for (size_t i = 2; i < results.size(); ++i) {
    const sim::RunResult& r = results[i];
    const double captured = c.SavingUsd(r);
    std::printf("run %s saves %.2f (%.1f %%) against %s: %.1f %% of the most deferral could\n", r.name.c_str(),
                captured, Pct(captured, yardstick.total_cost_usd), yardstick.name.c_str(), Pct(captured, most));
    auto held = split.find(r.name);
    auto at_once = split.find(yardstick.name);
    if (held == split.end() || at_once == split.end()) continue;
    std::printf("  of which");
    for (std::string_view team :
         {sim::kMeetableTeam, sim::kUnmeetableTeam, sim::kNoDeadlineTeam, gpuscaler::report::kIdle}) {
      const double before = CostOf(at_once->second, team), after = CostOf(held->second, team);
      if (before != 0 || after != 0) std::printf(" %s %.2f", std::string(team).c_str(), before - after);
    }
    const double before = CostOf(at_once->second, sim::kMeetableTeam);
    const double after = CostOf(held->second, sim::kMeetableTeam);
    const double bound = c.bound.meetable.deferred_usd;
    std::printf("; on the meetable work %.1f %% of the most (measured share %.2f, the bound %.2f)\n",
                Pct(before - after, before - bound), before, bound);
  }
}

}  // namespace

int main(int argc, char** argv) {
  gpuscaler::cli::SimInputs in;
  std::string policy_file;
  std::string runs = "gpuscaler-reactive";
  bool no_replay = false;
  std::string split_db;
  CLI::App app{"Lower bound on the cost of meeting every meetable class deadline, against running at once"};
  app.add_option("--trace", in.trace_file, "Trace file, as gpuscaler sim")->required();
  app.add_option("--trace-format", in.trace_format, "Trace format, as gpuscaler sim")->required();
  app.add_option("--prices", in.prices_file, "Spot market file, as gpuscaler sim");
  app.add_option("--prices-format", in.prices_format, "Spot market format, as gpuscaler sim");
  app.add_option("--catalog", in.catalog_file, "Catalog file; default: the default catalog");
  app.add_option("--policy", policy_file, "Policy file whose classes have deadlines")->required();
  app.add_option("--cbl-instance-types", in.cbl_instance_types, "As gpuscaler sim");
  app.add_option("--cbl-nodes-when-up", in.cbl_nodes_when_up, "As gpuscaler sim");
  app.add_option("--seed", in.seed, "Random seed of the replays (default 1)");
  app.add_option("--days", in.days, "Length of the replay in days (default: the trace's span plus one)");
  app.add_option("--runs", runs,
                 "Runs to set the bound against, comma-separated (on-demand always runs first); "
                 "the first is the at-once yardstick");
  app.add_flag("--no-replay", no_replay, "Print the bound only");
  app.add_option("--split-db", split_db,
                 "Also replay the runs with each job's team set to meetable, unmeetable or no-deadline, "
                 "into this new audit store, so `gpuscaler report --group-by team` splits their bills");
  CLI11_PARSE(app, argc, argv);
  // A store that already holds runs of these names would mix them up.
  if (!split_db.empty() && std::filesystem::exists(split_db)) {
    return Fail("--split-db " + split_db + " exists: give a new file");
  }

  std::string catalog_source;
  gpuscaler::Result<gpuscaler::Catalog> catalog = gpuscaler::cli::LoadSimCatalog(in, &catalog_source);
  if (!catalog) return Fail(catalog.error().message());
  gpuscaler::PolicyLoadResult loaded = gpuscaler::LoadPolicyFile(policy_file, &*catalog);
  if (!loaded.ok()) {
    for (const gpuscaler::ConfigProblem& p : loaded.problems) std::cerr << p.ToString() << "\n";
    return 2;
  }
  std::vector<std::string> warnings;
  gpuscaler::Result<sim::Scenario> scenario =
      gpuscaler::cli::BuildSimScenario(in, *catalog, catalog_source, loaded.policy, policy_file, &warnings);
  for (const std::string& w : warnings) std::cerr << "deadline_bound: " << w << "\n";
  if (!scenario) return Fail(scenario.error().message());

  gpuscaler::Result<DeadlineBound> bound = sim::BoundDeadlines(*scenario);
  if (!bound) return Fail(bound.error().message());
  const DeadlineBound& b = *bound;
  PrintBound(*scenario, b);
  if (no_replay) return 0;

  std::vector<std::string> names;
  for (size_t start = 0; start <= runs.size();) {
    const size_t comma = runs.find(',', start);
    const size_t end = comma == std::string::npos ? runs.size() : comma;
    if (end > start && runs.substr(start, end - start) != "on-demand")
      names.push_back(runs.substr(start, end - start));
    start = end + 1;
  }
  if (names.empty()) return Fail("--runs: name at least one run besides on-demand");
  gpuscaler::Result<std::vector<sim::RunResult>> results = sim::RunMany(*scenario, names, sim::RunOptions{});
  if (!results) return Fail(results.error().message());

  TeamCosts split_cost;
  if (!split_db.empty()) {
    gpuscaler::Result<TeamCosts> split = ReplaySplit(*scenario, names, *results, split_db);
    if (!split) return Fail(split.error().ToString());
    split_cost = std::move(split).value();
  }

  const sim::RunResult& on_demand = results->front();
  const sim::RunResult& yardstick = (*results)[1];
  for (const sim::RunResult& r : *results) {
    std::printf(
        "run %-20s cost %11.2f (on-demand %11.2f, spot %10.2f), paid GPU-h %10.1f, busy %10.1f, lost %8.1f\n",
        r.name.c_str(), r.total_cost_usd, r.cost_by_capacity_type.at("on-demand"),
        r.cost_by_capacity_type.at("spot"), r.paid_gpu_hours, r.busy_gpu_hours, r.gpu_hours_lost);
  }
  const sim::BoundComparison against_yardstick = Against(b, yardstick, split_cost);
  for (const sim::BoundComparison& c : {against_yardstick, Against(b, on_demand, split_cost)}) {
    for (const sim::BoundSplit& s : c.splits) {
      std::printf(
          "against %-20s meetable share %10.2f (%s): best deferred %11.2f, saves at most %10.2f (%.1f %%)\n",
          c.at_once_run.c_str(), s.meetable_usd, s.description.c_str(), s.best_deferred_usd, s.saving_usd,
          s.saving_pct);
    }
  }
  PrintCaptured(*results, against_yardstick, split_cost);
  const double most = std::max(0.0, against_yardstick.Best().saving_usd);
  const double best_pct = Pct(most, yardstick.total_cost_usd);
  std::printf("verdict: at most %.1f %% below %s; %s\n", best_pct, yardstick.name.c_str(),
              best_pct < 20.0 ? "20 % below is out of reach on these inputs"
                              : "20 % below is not excluded by this bound");
  std::printf("that best deferred cost, %.2f, is %.1f %% below %s\n", yardstick.total_cost_usd - most,
              Pct(on_demand.total_cost_usd - (yardstick.total_cost_usd - most), on_demand.total_cost_usd),
              on_demand.name.c_str());
  return 0;
}
