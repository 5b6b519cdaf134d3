// sim_speed: times one replay of a built-in scenario through the controller
// and prints ticks/s and jobs/s, plus the answer (cost, jobs) so a speed-up
// that changes the result shows.
//
//   sim_speed [--scenario NAME] [--run NAME] [--days N] [--seed N]
//             [--baseline NAME] [--digest 1]
// Defaults: scale-30d-100k, run "gpuscaler" (MakePlan). Uses the built-in
// catalog so the figure does not depend on files.
// --baseline replays NAME first in the same process (e.g. on-demand, whose
// plans come from the same planner) and prints the run's replay time as a
// multiple of it. --digest 1 hashes every plan the run's planner returns
// (its JSON line, FNV-1a): equal digests mean byte-identical plans; the
// hashing adds to the replay time.
// Times are wall (steady clock) and the process's CPU time (std::clock): on
// a shared machine CPU time is the closer to an idle wall time.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>

#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/planner.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace {

struct PlanDigest {
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a offset basis
  int64_t plans = 0;
  void Add(const std::string& text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ULL;
    }
    ++plans;
  }
};

struct Timed {
  gpuscaler::sim::RunResult result;
  double wall_s = 0;
  double cpu_s = 0;
};

Timed TimedRun(const gpuscaler::sim::Scenario& scenario, const gpuscaler::sim::RunSpec& spec) {
  Timed t;
  const auto wall0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  t.result = gpuscaler::sim::RunScenario(scenario, spec);
  t.cpu_s = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return t;
}

void PrintRun(const char* label, const Timed& t) {
  const gpuscaler::sim::RunResult& r = t.result;
  std::printf("%s: %lld jobs, %lld ticks, %lld planner calls\n", label, static_cast<long long>(r.jobs_total),
              static_cast<long long>(r.ticks), static_cast<long long>(r.planner_calls));
  std::printf("replay %.2f s wall, %.2f s CPU: %.0f ticks/s, %.0f jobs/s\n", t.wall_s, t.cpu_s,
              static_cast<double>(r.ticks) / t.wall_s, static_cast<double>(r.jobs_total) / t.wall_s);
  std::printf("answer: cost %.2f USD, completed %lld, unfinished %lld, launches %d, interruptions %d\n",
              r.total_cost_usd, static_cast<long long>(r.jobs_completed),
              static_cast<long long>(r.jobs_unfinished), r.launches, r.interruptions);
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_name = "scale-30d-100k";
  std::string run_name = "gpuscaler";
  std::string baseline_name;
  bool digest = false;
  std::optional<int> days;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--scenario") == 0) scenario_name = argv[i + 1];
    else if (std::strcmp(argv[i], "--run") == 0) run_name = argv[i + 1];
    else if (std::strcmp(argv[i], "--baseline") == 0) baseline_name = argv[i + 1];
    else if (std::strcmp(argv[i], "--digest") == 0) digest = std::atoi(argv[i + 1]) != 0;
    else if (std::strcmp(argv[i], "--days") == 0) days = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto scenario = gpuscaler::sim::MakeBuiltinScenario(scenario_name, seed, days, gpuscaler::BuiltinCatalog());
  if (!scenario) {
    std::fprintf(stderr, "%s\n", scenario.error().message().c_str());
    return 2;
  }
  scenario->catalog_source = "built-in";
  const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("scenario %s: generate %.2f s\n", scenario_name.c_str(), gen_s);
  std::optional<Timed> baseline;
  if (!baseline_name.empty()) {
    auto spec = gpuscaler::sim::MakeRunSpec(baseline_name, *scenario, nullptr);
    if (!spec) {
      std::fprintf(stderr, "%s\n", spec.error().message().c_str());
      return 2;
    }
    baseline = TimedRun(*scenario, *spec);
    PrintRun(("baseline " + baseline_name).c_str(), *baseline);
  }
  gpuscaler::sim::RunResult od;
  const gpuscaler::sim::RunResult* od_ptr = nullptr;
  if (run_name == "static-peak") {
    od = gpuscaler::sim::RunScenario(*scenario, *gpuscaler::sim::MakeRunSpec("on-demand", *scenario, nullptr));
    od_ptr = &od;
  }
  auto spec = gpuscaler::sim::MakeRunSpec(run_name, *scenario, od_ptr);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().message().c_str());
    return 2;
  }
  PlanDigest plans;
  if (digest) {
    gpuscaler::PlannerFn inner = spec->planner;
    spec->planner = [inner, &plans](const gpuscaler::Snapshot& s, const gpuscaler::Policy& p) {
      gpuscaler::Plan plan = inner ? inner(s, p) : gpuscaler::MakePlan(s, p);
      plans.Add(gpuscaler::FormatPlanJsonLine(plan));
      return plan;
    };
  }
  const Timed run = TimedRun(*scenario, *spec);
  PrintRun(("run " + run_name).c_str(), run);
  if (baseline) {
    std::printf("run / baseline: %.2fx wall, %.2fx CPU\n", run.wall_s / baseline->wall_s,
                run.cpu_s / baseline->cpu_s);
  }
  if (digest) {
    std::printf("plan digest: %016llx over %lld plans\n", static_cast<unsigned long long>(plans.hash),
                static_cast<long long>(plans.plans));
  }
  return 0;
}
