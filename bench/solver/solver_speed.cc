// Planner speed: BM_Plan/<units>/<existing_nodes> over 600 offerings, and
// BM_Consolidate/<nodes>. Items processed are pending units (nodes for
// consolidation), so items_per_second reads as units/s.
#include <benchmark/benchmark.h>

#include "gpuscaler/solver/planner.h"
#include "solver/synthetic.h"

namespace gpuscaler::bench {
namespace {

void BM_Plan(benchmark::State& state) {
  const Snapshot s = SyntheticSnapshot(int(state.range(0)), int(state.range(1)), 42);
  Policy p = SyntheticPolicy();
  p.disruption.consolidation = false;  // scale-up only; consolidation has its own benchmark
  size_t placed = 0;
  for (auto _ : state) {
    Plan plan = MakePlan(s, p);
    placed = plan.placements.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["placed"] = double(placed);
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Plan)
    ->ArgsProduct({{1000, 10000, 100000}, {0, 2000}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Small inputs get the planner's extra search (PlannerOptions::
// multi_start_max_units): what it costs with and without existing nodes.
BENCHMARK(BM_Plan)->ArgsProduct({{40, 100, 500}, {0, 20}})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Consolidate(benchmark::State& state) {
  const Snapshot s = SyntheticSnapshot(0, int(state.range(0)), 43);
  Policy p = SyntheticPolicy();
  // Let every candidate be tried: no tick or disruption limit cuts the work short.
  p.scaling.max_nodes_removed_per_tick = int(state.range(0));
  p.disruption.max_disrupted_per_interval = int(state.range(0));
  size_t removed = 0;
  for (auto _ : state) {
    Plan plan = MakePlan(s, p);
    removed = plan.terminations.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["terminations"] = double(removed);
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Consolidate)->Arg(2000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gpuscaler::bench

BENCHMARK_MAIN();
