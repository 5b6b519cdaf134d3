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
// prints the offline lower bound of bench/sim/deadline_bound.h, then replays
// on-demand and --runs (default gpuscaler-reactive, the at-once yardstick;
// more runs, e.g. gpuscaler, are set against it) and sets the bound against
// the at-once runs. Jobs that cannot meet their deadline run the same with or
// without deferral, so the best deferred cost is an at-once run's bill less
// what it paid for the meetable work, plus the bound. What it paid for that
// work is taken three ways, the larger the more generous to deferral:
//  - on-demand for all of it (the cheapest on-demand price per GPU-hour, no
//    idle);
//  - with --split-db: measured. The runs are replayed again with each job's
//    team set to "meetable", "unmeetable" or "no-deadline", recorded in a new
//    audit store, and their bills attributed by team as `gpuscaler report
//    --group-by team` does; then also with all of the run's idle cost added;
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
#include <vector>

#include "bench/sim/deadline_bound.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/runner.h"
#include "sim/workload.h"
#include "src/cli/sim_inputs.h"

namespace {

using gpuscaler::bench::DeadlineBound;
using gpuscaler::bench::JobTotals;

int Fail(const std::string& message) {
  std::cerr << "deadline_bound: " << message << "\n";
  return 2;
}

double Pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

void PrintTotals(const char* name, const JobTotals& t) {
  std::printf(
      "%-12s jobs %6lld  GPU-h %10.1f  bound %11.2f (spot %5.1f %%)  at once %11.2f (spot %5.1f %%)  "
      "on-demand %11.2f\n",
      name, static_cast<long long>(t.jobs), t.gpu_hours, t.deferred_usd,
      Pct(t.deferred_spot_gpu_hours, t.gpu_hours), t.at_once_usd, Pct(t.at_once_spot_gpu_hours, t.gpu_hours),
      t.on_demand_usd);
}

// The bill of run `run` in the audit store `db`, by team (idle: "__idle__"),
// as `gpuscaler report --run RUN --group-by team` attributes it.
gpuscaler::Result<std::map<std::string, double>> CostByTeam(const std::string& db, const std::string& run) {
  auto reader = gpuscaler::AuditReader::Open(db);
  if (!reader) return reader.error();
  gpuscaler::report::ReportQuery query;
  query.run = run;
  query.from_given = false;
  query.to_given = false;
  auto scope = gpuscaler::report::ResolveScope(**reader, query);
  if (!scope) return scope.error();
  query.from = scope->from;
  query.to = scope->to;
  auto facts = gpuscaler::report::BuildCostFacts(**reader, query);
  if (!facts) return facts.error();
  std::map<std::string, double> out;
  for (const auto& row :
       gpuscaler::report::GroupLines(*facts, {gpuscaler::report::Dimension::kTeam}, std::nullopt)) {
    out[row.keys.at(0)] += row.m.cost_usd;
  }
  return out;
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
  gpuscaler::Result<gpuscaler::sim::Scenario> scenario =
      gpuscaler::cli::BuildSimScenario(in, *catalog, catalog_source, loaded.policy, policy_file, &warnings);
  for (const std::string& w : warnings) std::cerr << "deadline_bound: " << w << "\n";
  if (!scenario) return Fail(scenario.error().message());

  gpuscaler::Result<DeadlineBound> bound = gpuscaler::bench::BoundDeadlines(*scenario);
  if (!bound) return Fail(bound.error().message());
  const DeadlineBound& b = *bound;
  std::printf("scenario: %s, %zu jobs, horizon %lld s, policy %s, spot notice %lld s\n",
              scenario->description.c_str(), scenario->trace.jobs.size(),
              static_cast<long long>(b.horizon.count()), scenario->policy.name.c_str(),
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
  gpuscaler::Result<std::vector<gpuscaler::sim::RunResult>> results =
      gpuscaler::sim::RunMany(*scenario, names, gpuscaler::sim::RunOptions{});
  if (!results) return Fail(results.error().message());

  std::map<std::string, std::map<std::string, double>> split_cost;  // run -> team -> USD
  if (!split_db.empty()) {
    // The team is the only job field the replay records per held GPU-second
    // and that no class policy reads; the planner groups units by it, so the
    // labelled replay is printed next to the plain one to show whether it
    // ran the same.
    gpuscaler::sim::Scenario labelled = *scenario;
    const std::map<std::string, gpuscaler::DeadlineRule> deadlines =
        gpuscaler::sim::ClassDeadlines(labelled.policy);
    for (gpuscaler::sim::TraceJob& job : labelled.trace.jobs) {
      const std::optional<gpuscaler::WallTime> due = gpuscaler::sim::JobDueAt(job, labelled.start, deadlines);
      job.unit.team = !due                                                         ? "no-deadline"
                      : gpuscaler::sim::CanMeetDeadline(job, labelled.start, *due) ? "meetable"
                                                                                   : "unmeetable";
    }
    gpuscaler::SqliteAuditStoreOptions so;
    so.intent_sync = gpuscaler::SqliteAuditStoreOptions::IntentSync::kWithTick;
    so.group_commit_ticks = 64;
    auto store = gpuscaler::SqliteAuditStore::Open(split_db, so);
    if (!store) return Fail(split_db + ": " + store.error().ToString());
    gpuscaler::sim::RunOptions with_store;
    with_store.store = store->get();
    auto split = gpuscaler::sim::RunMany(labelled, names, with_store);
    if (!split) return Fail(split.error().message());
    if (gpuscaler::Status flushed = (*store)->Flush(); !flushed.ok()) {
      return Fail(split_db + ": " + flushed.error().ToString());
    }
    for (size_t i = 0; i < split->size(); ++i) {
      const gpuscaler::sim::RunResult& r = (*split)[i];
      auto by_team = CostByTeam(split_db, r.name);
      if (!by_team) return Fail(split_db + ": " + by_team.error().ToString());
      std::printf("labelled run %-20s cost %11.2f (plain run %11.2f) =", r.name.c_str(), r.total_cost_usd,
                  (*results)[i].total_cost_usd);
      for (const auto& [team, usd] : *by_team) std::printf(" %s %.2f", team.c_str(), usd);
      std::printf("\n");
      if (std::abs(r.total_cost_usd - (*results)[i].total_cost_usd) >= 0.005) {
        std::printf("warning: the labelled %s replay ran differently; its split is of that replay\n",
                    r.name.c_str());
      }
      split_cost[r.name] = *by_team;
    }
  }

  const JobTotals& m = b.meetable;
  const double od_per_gpu_hour = m.gpu_hours > 0 ? m.on_demand_usd / m.gpu_hours : 0;
  const gpuscaler::sim::RunResult& on_demand = results->front();
  const gpuscaler::sim::RunResult& yardstick = (*results)[1];
  for (const gpuscaler::sim::RunResult& r : *results) {
    std::printf(
        "run %-20s cost %11.2f (on-demand %11.2f, spot %10.2f), paid GPU-h %10.1f, busy %10.1f, lost %8.1f\n",
        r.name.c_str(), r.total_cost_usd, r.cost_by_capacity_type.at("on-demand"),
        r.cost_by_capacity_type.at("spot"), r.paid_gpu_hours, r.busy_gpu_hours, r.gpu_hours_lost);
  }
  // What the meetable work may have cost in an at-once run, each way this
  // tool can tell; the best deferred cost is the run's bill less that share
  // plus the bound, so the larger the share, the larger the saving.
  auto shares = [&](const gpuscaler::sim::RunResult& r) {
    std::vector<std::pair<std::string, double>> out{{"on-demand for the meetable work", m.on_demand_usd}};
    auto split = split_cost.find(r.name);
    if (split != split_cost.end()) {
      const auto team = [&split](const char* name) {
        auto it = split->second.find(name);
        return it == split->second.end() ? 0.0 : it->second;
      };
      out.emplace_back("measured meetable share", team("meetable"));
      out.emplace_back("measured, with all idle", team("meetable") + team("__idle__"));
    } else {
      const double overhead_gpu_h = r.paid_gpu_hours - r.busy_gpu_hours + r.gpu_hours_lost;
      out.emplace_back("with all idle and lost GPU-h at on-demand",
                       m.on_demand_usd + overhead_gpu_h * od_per_gpu_hour);
    }
    return out;
  };
  double most = 0;  // the largest saving against the yardstick
  for (const gpuscaler::sim::RunResult* at_once : {&yardstick, &on_demand}) {
    const double total = at_once->total_cost_usd;
    for (const auto& [how, share] : shares(*at_once)) {
      const double saving = std::min(total, share) - m.deferred_usd;
      std::printf(
          "against %-20s meetable share %10.2f (%s): best deferred %11.2f, saves at most %10.2f (%.1f %%)\n",
          at_once->name.c_str(), share, how.c_str(), total - saving, saving, Pct(saving, total));
      if (at_once == &yardstick) most = std::max(most, saving);
    }
  }
  for (size_t i = 2; i < results->size(); ++i) {
    const gpuscaler::sim::RunResult& r = (*results)[i];
    const double captured = yardstick.total_cost_usd - r.total_cost_usd;
    std::printf("run %s saves %.2f (%.1f %%) against %s: %.1f %% of the most deferral could\n",
                r.name.c_str(), captured, Pct(captured, yardstick.total_cost_usd), yardstick.name.c_str(),
                Pct(captured, most));
    // Where its difference lies: deferral acts on the meetable work; the
    // rest is the other work and idle running differently.
    auto held = split_cost.find(r.name);
    auto at_once = split_cost.find(yardstick.name);
    if (held == split_cost.end() || at_once == split_cost.end()) continue;
    const auto cost = [](const std::map<std::string, double>& by_team, const char* team) {
      auto it = by_team.find(team);
      return it == by_team.end() ? 0.0 : it->second;
    };
    std::printf("  of which");
    for (const char* team : {"meetable", "unmeetable", "no-deadline", "__idle__"}) {
      const double before = cost(at_once->second, team), after = cost(held->second, team);
      if (before != 0 || after != 0) std::printf(" %s %.2f", team, before - after);
    }
    const double before = cost(at_once->second, "meetable"), after = cost(held->second, "meetable");
    std::printf("; on the meetable work %.1f %% of the most (measured share %.2f, the bound %.2f)\n",
                Pct(before - after, before - m.deferred_usd), before, m.deferred_usd);
  }
  const double best_pct = Pct(most, yardstick.total_cost_usd);
  std::printf("verdict: at most %.1f %% below %s; %s\n", best_pct, yardstick.name.c_str(),
              best_pct < 20.0 ? "20 % below is out of reach on these inputs"
                              : "20 % below is not excluded by this bound");
  std::printf("that best deferred cost, %.2f, is %.1f %% below %s\n", yardstick.total_cost_usd - most,
              Pct(on_demand.total_cost_usd - (yardstick.total_cost_usd - most), on_demand.total_cost_usd),
              on_demand.name.c_str());
  return 0;
}
