// sim_speed: times one replay of a built-in scenario through the controller
// and prints ticks/s and jobs/s, plus the answer (cost, jobs) so a speed-up
// that changes the result shows.
//
//   sim_speed [--scenario NAME] [--run NAME] [--days N] [--seed N]
// Defaults: scale-30d-100k, run "gpuscaler" (MakePlan). Uses the built-in
// catalog so the figure does not depend on files.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "sim/runner.h"
#include "sim/scenario.h"

int main(int argc, char** argv) {
  std::string scenario_name = "scale-30d-100k";
  std::string run_name = "gpuscaler";
  std::optional<int> days;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--scenario") == 0) scenario_name = argv[i + 1];
    else if (std::strcmp(argv[i], "--run") == 0) run_name = argv[i + 1];
    else if (std::strcmp(argv[i], "--days") == 0) days = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto scenario = gpuscaler::sim::MakeBuiltinScenario(scenario_name, seed, days, gpuscaler::BuiltinCatalog());
  if (!scenario) {
    std::fprintf(stderr, "%s\n", scenario.error().message().c_str());
    return 2;
  }
  scenario->catalog_source = "built-in";
  const auto t1 = Clock::now();
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
  const auto t2 = Clock::now();
  const gpuscaler::sim::RunResult r = gpuscaler::sim::RunScenario(*scenario, *spec);
  const auto t3 = Clock::now();
  const double gen_s = std::chrono::duration<double>(t1 - t0).count();
  const double run_s = std::chrono::duration<double>(t3 - t2).count();
  std::printf("scenario %s, run %s: %lld jobs, %lld ticks, %lld planner calls\n", scenario_name.c_str(),
              run_name.c_str(), static_cast<long long>(r.jobs_total), static_cast<long long>(r.ticks),
              static_cast<long long>(r.planner_calls));
  std::printf("generate %.2f s, replay %.2f s: %.0f ticks/s, %.0f jobs/s\n", gen_s, run_s,
              static_cast<double>(r.ticks) / run_s, static_cast<double>(r.jobs_total) / run_s);
  std::printf("answer: cost %.2f USD, completed %lld, unfinished %lld, launches %d, interruptions %d\n",
              r.total_cost_usd, static_cast<long long>(r.jobs_completed), static_cast<long long>(r.jobs_unfinished),
              r.launches, r.interruptions);
  return 0;
}
