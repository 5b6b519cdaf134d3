// Daemon tick overhead at 1k and 10k pending units, excluding network
// waits (the bar is in bench/RESULTS.md). One LiveEngine tick = policy file check, demand
// from signals (SignalWorkSource), Controller::Tick (snapshot, planner,
// governor, audit writes to SQLite) against the simulated cloud in dry-run
// mode, so every tick sees the same pending work and plans it again. Signals
// come from an in-process reader (no network), as do the prices.
//
//   ./build/release/bench/daemon/tick_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/scenario.h"
#include "sim/sim_cloud.h"

namespace gpuscaler::daemon {
namespace {

constexpr const char* kPolicy = R"yaml(apiVersion: gpuscaler/v1
kind: Policy
name: tick-bench
pools:
  - name: gpu
    families: [g5, g6, g6e, g4dn, p4d, p5]
    regions: [us-east-1]
    max_nodes: 5000
classes:
  - name: render
    pools: [gpu]
    shape: {gpus: 1, cpu_milli: 3000, memory_mib: 12000}
    signals:
      queue_depth: {source: rabbitmq, queue: render}
  - name: train
    pools: [gpu]
    priority: 10
    shape: {gpus: 4, cpu_milli: 16000, memory_mib: 64000}
    signals:
      queue_depth: {source: prometheus, query: "sum(train_jobs_waiting)"}
scaling:
  max_nodes_added_per_tick: 5000
)yaml";

void BM_DaemonTick(benchmark::State& state) {
  const int pending = static_cast<int>(state.range(0));
  const std::string dir = std::filesystem::temp_directory_path() / ("gpuscaler-tick-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string policy_file = dir + "/policy.yaml";
  std::ofstream(policy_file) << kPolicy;

  std::string source;
  Catalog catalog = DefaultCatalog("", &source);
  ManualClock clock(WallTime(Seconds(1790000000)));
  sim::SpotMarket market;
  sim::SimCloud cloud(clock, catalog, catalog.Offerings({"us-east-1"}), market, {});
  auto store = std::move(SqliteAuditStore::Open(dir + "/audit.db")).value();

  LiveEngineParts parts;
  parts.clock = &clock;
  parts.cloud = &cloud;
  parts.store = store.get();
  parts.catalog = &catalog;
  parts.watcher = std::make_unique<PolicyWatcher>(policy_file, catalog);
  if (!parts.watcher->LoadInitial().ok()) {
    state.SkipWithError("policy");
    return;
  }
  // 80 % one-GPU render units, 20 % four-GPU training units.
  parts.read_signals = [&clock, pending](const Policy&, WallTime now) {
    std::vector<ClassSignal> out(2);
    out[0].workload_class = "render";
    out[0].reading = signals::MakeReading("rabbitmq", "//render", pending * 0.8, now);
    out[1].workload_class = "train";
    out[1].reading = signals::MakeReading("prometheus", "sum(train_jobs_waiting)", pending * 0.2, now);
    (void)clock;
    return out;
  };
  parts.controller_options.dry_run = true;
  parts.controller_options.reuse_unchanged_plans = false;  // plan on every tick: the worst case
  parts.controller_options.max_pending_units = 20000;
  std::unique_ptr<Engine> engine = MakeLiveEngine(std::move(parts));

  int64_t planned_units = 0;
  for (auto _ : state) {
    clock.Advance(Seconds(30));
    EngineTick t = engine->Tick();
    planned_units = static_cast<int64_t>(engine->controller().snapshot().pending.size());
    benchmark::DoNotOptimize(t.report.plan.launches.size());
  }
  state.counters["pending_units"] = static_cast<double>(planned_units);
  state.counters["units/s"] = benchmark::Counter(static_cast<double>(planned_units) * state.iterations(),
                                                 benchmark::Counter::kIsRate);
  engine.reset();
  store.reset();
  // Database growth per tick: the decision row and the planner's input
  // (store/decision_inputs.h) the worst case writes on every tick.
  std::error_code ec;
  double bytes = 0;
  for (const char* file : {"/audit.db", "/audit.db-wal"}) {
    const auto size = std::filesystem::file_size(dir + file, ec);
    if (!ec) bytes += static_cast<double>(size);
  }
  state.counters["db_bytes/tick"] = bytes / static_cast<double>(std::max<int64_t>(1, state.iterations()));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_DaemonTick)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gpuscaler::daemon

BENCHMARK_MAIN();
