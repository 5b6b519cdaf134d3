// report_bench: a year of audit data for a 500-node GPU fleet, reported.
//
// The data (written once with the store API, then reused from
// $GPUSCALER_BENCH_DIR or /tmp): 500 node slots for 365 days, each slot a
// chain of nodes replacing one another: 200 on-demand slots (lives ~10 days)
// and 300 spot slots (lives ~2 days, a quarter interrupted), five GPU types
// from 1 to 8 GPUs, three zones; spot prices move every 6 hours (each move
// a node_prices row on every live node of the offering, as the daemon
// records them); one launch decision per node; hourly usage per node for one
// or two workload classes (as the controller flushes it), four teams. About
// 36k nodes, 6.5M usage rows, 0.45M price rows.
//
// Every benchmark checks its answer: the report's total against the bill the
// generator computed while writing (relative 1e-9).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler::report {
namespace {

constexpr int kSlots = 500;
constexpr int kOnDemandSlots = 200;
constexpr int64_t kDay = 86400;
constexpr int64_t kPriceStep = 6 * 3600;
constexpr const char* kMarker = "report-bench-v1";

struct Type {
  const char* name;
  int gpus;
  double on_demand;
};
constexpr Type kTypes[] = {{"g5.xlarge", 1, 1.006},
                           {"g5.12xlarge", 4, 5.672},
                           {"g6.xlarge", 1, 0.8048},
                           {"g5.48xlarge", 8, 16.288},
                           {"p4d.24xlarge", 8, 32.7726}};
constexpr const char* kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
constexpr const char* kClasses[] = {"inference", "training", "eval", "batch"};
constexpr const char* kTeams[] = {"search", "research", "", "ads"};  // "" : mapped by --team-map

WallTime Start() { return FromUnixSeconds(1764547200); }  // 2025-12-01
WallTime End() { return Start() + Seconds(365 * kDay); }

struct Fleet {
  std::string path;
  double expected_usd = 0;  // the bill over [Start, End)
  int64_t nodes = 0;
  int64_t usage_rows = 0;
  int64_t price_rows = 0;
};

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "report_bench: %s: %s\n", what, s.error().ToString().c_str());
    std::exit(1);
  }
}

// Writes the fleet (or, with `write` false, only recomputes its bill).
Fleet Generate(const std::string& path, bool write) {
  Fleet fleet;
  fleet.path = path;
  std::unique_ptr<SqliteAuditStore> store;
  if (write) {
    SqliteAuditStoreOptions o;
    o.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick;
    Result<std::unique_ptr<SqliteAuditStore>> opened = SqliteAuditStore::Open(path, o);
    Check(opened.status(), "opening the bench database");
    store = std::move(*opened);
  }
  const int64_t start = ToUnixSeconds(Start()), end = ToUnixSeconds(End());
  const size_t steps = static_cast<size_t>((end - start) / kPriceStep + 8);
  // Spot price series per (type, zone), a mean-reverting walk quoted to 1/100 cent.
  std::vector<std::vector<double>> series;
  std::mt19937_64 walk(42);
  std::normal_distribution<double> z(0, 0.05);
  for (const Type& t : kTypes) {
    for (size_t zi = 0; zi < 3; ++zi) {
      const double base = t.on_demand * (0.30 + 0.05 * static_cast<double>(zi));
      std::vector<double> s(steps);
      double lp = std::log(base);
      for (double& p : s) {
        lp += 0.15 * (std::log(base) - lp) + z(walk);
        p = std::round(std::exp(lp) * 10000.0) / 10000.0;
      }
      series.push_back(std::move(s));
    }
  }
  // Step k covers [start - 2 days + k * step, ...): nodes may launch before the year.
  const int64_t origin = start - 2 * kDay;
  auto step_of = [&](int64_t t) { return static_cast<size_t>((t - origin) / kPriceStep); };

  int64_t next_id = 1;
  for (int slot = 0; slot < kSlots; ++slot) {
    std::mt19937_64 rng(1000 + static_cast<uint64_t>(slot));
    std::uniform_real_distribution<double> u(0, 1);
    const bool spot = slot >= kOnDemandSlots;
    const size_t type_index = static_cast<size_t>(slot) % 5;
    const size_t zone_index = static_cast<size_t>(slot / 5) % 3;
    const Type& type = kTypes[type_index];
    const std::vector<double>& prices = series[type_index * 3 + zone_index];
    const int classes = slot % 2 == 0 ? 1 : 2;
    const double mean_life = spot ? 2.0 * kDay : 10.0 * kDay;
    if (write) Check(store->BeginTick(), "begin");
    int64_t t = start - static_cast<int64_t>(u(rng) * kDay);
    while (t < end) {
      const int64_t life = std::max<int64_t>(120, static_cast<int64_t>(-std::log(1 - u(rng)) * mean_life));
      const int64_t e = t + life;
      const bool interrupted = spot && u(rng) < 0.25;
      char id[32];
      std::snprintf(id, sizeof(id), "i-%012llx", static_cast<unsigned long long>(next_id++));
      const size_t cls0 = static_cast<size_t>(slot) % 4;
      const double launch_price = spot ? prices[step_of(t)] : type.on_demand;
      if (write) {
        DecisionRecord d;
        d.time = FromUnixSeconds(t);
        d.policy_name = kMarker;
        d.policy_hash = "bench";
        d.summary = std::string("launch 1 x ") + type.name + (spot ? " spot" : " on-demand") + ": " + kClasses[cls0] +
                    " demand";
        Result<int64_t> decision = store->RecordDecision(d);
        Check(decision.status(), "decision");
        NodeLaunchRecord n;
        n.instance_id = id;
        n.node_id = id;
        n.pool = spot ? "gpu-spot" : "gpu-od";
        n.offering.instance_type = type.name;
        n.offering.region = "us-east-1";
        n.offering.zone = kZones[zone_index];
        n.offering.capacity_type = spot ? CapacityType::kSpot : CapacityType::kOnDemand;
        n.offering.usd_per_hour = launch_price;
        n.offering.on_demand_usd_per_hour = type.on_demand;
        n.gpu_count = type.gpus;
        n.launch_time = FromUnixSeconds(t);
        n.decision_id = *decision;
        n.reason = std::string(kClasses[cls0]) + " demand over capacity";
        Check(store->RecordNodeLaunch(n), "launch");
      }
      ++fleet.nodes;
      const int64_t stop = std::min(e, end);  // running at the year's end: billed to it
      // Prices: a row at each step boundary inside the node's life.
      double price = launch_price;
      int64_t seg = t;
      auto bill = [&](int64_t a, int64_t b, double p) {
        a = std::max(a, start);
        b = std::min(b, end);
        if (b > a) fleet.expected_usd += p * static_cast<double>(b - a) / 3600.0;
      };
      if (spot) {
        for (int64_t b = origin + static_cast<int64_t>(step_of(t) + 1) * kPriceStep; b < stop; b += kPriceStep) {
          const double p = prices[step_of(b)];
          if (p == price) continue;
          bill(seg, b, price);
          seg = b;
          price = p;
          if (write) Check(store->RecordNodePrice(id, FromUnixSeconds(b), p), "price");
          ++fleet.price_rows;
        }
      }
      bill(seg, stop, price);
      // The 60 s minimum: only a node launched in the last minute of the year
      // is that short (lives are >= 120 s).
      if (t >= start && stop - t < 60) fleet.expected_usd += price * static_cast<double>(60 - (stop - t)) / 3600.0;
      // Hourly usage from the launch.
      if (write) {
        std::vector<UsageRecord> usage;
        for (int64_t h = t; h < stop; h += 3600) {
          const int64_t he = std::min(h + 3600, stop);
          for (int c = 0; c < classes; ++c) {
            const size_t k = (cls0 + static_cast<size_t>(c)) % 4;
            const double share = classes == 1 ? 0.5 + 0.5 * u(rng) : 0.25 + 0.25 * u(rng);
            UsageRecord r;
            r.instance_id = id;
            r.workload_class = kClasses[k];
            r.team = kTeams[k];
            r.start = FromUnixSeconds(h);
            r.end = FromUnixSeconds(he);
            r.gpu_seconds_allocated = type.gpus * share * static_cast<double>(he - h);
            r.gpu_seconds_busy = r.gpu_seconds_allocated * (0.6 + 0.35 * u(rng));
            usage.push_back(std::move(r));
          }
        }
        fleet.usage_rows += static_cast<int64_t>(usage.size());
        if (!usage.empty()) Check(store->RecordUsage(usage), "usage");
        if (e < end) {
          Check(store->RecordNodeEnd({id, FromUnixSeconds(e), interrupted ? "interrupted" : "terminated"}), "end");
        }
      } else {
        // Keep the random stream identical to the writing pass.
        for (int64_t h = t; h < stop; h += 3600) {
          for (int c = 0; c < classes; ++c) {
            (void)u(rng);
            (void)u(rng);
          }
        }
      }
      t = e + static_cast<int64_t>(u(rng) * 300);
    }
    if (write) Check(store->CommitTick(), "commit");
  }
  return fleet;
}

const Fleet& TheFleet() {
  static const Fleet fleet = [] {
    const char* dir = std::getenv("GPUSCALER_BENCH_DIR");
    const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/gpuscaler-report-bench-v1.db";
    if (std::filesystem::exists(path)) {
      Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path);
      // Only a file written with this binary's schema: an older one may
      // still be readable but not laid out as a new store is.
      if (reader.ok() && (*reader)->SchemaVersion() == SqliteAuditStore::CurrentSchemaVersion()) {
        Result<std::vector<DecisionRow>> first = (*reader)->DecisionsAfterId(0, 1);
        if (first.ok() && !first->empty() && first->front().decision.policy_name == kMarker) {
          Fleet f = Generate(path, false);
          std::fprintf(stderr, "report_bench: reusing %s\n", path.c_str());
          return f;
        }
      }
    }
    const std::string tmp = path + ".building";
    std::filesystem::remove(tmp);
    std::filesystem::remove(tmp + "-wal");
    std::filesystem::remove(tmp + "-shm");
    std::fprintf(stderr, "report_bench: writing a year of a 500-node fleet to %s (once)...\n", path.c_str());
    Fleet f = Generate(tmp, true);
    std::filesystem::rename(tmp, path);
    std::fprintf(stderr, "report_bench: %lld nodes, %lld usage rows, %lld price rows, bill $%.2f\n",
                 static_cast<long long>(f.nodes), static_cast<long long>(f.usage_rows),
                 static_cast<long long>(f.price_rows), f.expected_usd);
    f.path = path;
    return f;
  }();
  return fleet;
}

ReportQuery YearQuery(Format format) {
  Result<ReportQuery> q = ParseReportQuery({{"from", "2025-12-01"},
                                            {"to", "2026-12-01"},
                                            {"as_of", "2026-12-01"},
                                            {"group_by", "team,capacity_type"},
                                            {"team_map", "eval=platform"},
                                            {"budget_monthly_usd", "1500000"}});
  Check(q.status(), "query");
  q->format = format;
  q->db_path = TheFleet().path;
  return *q;
}

// The whole report path: open the file, read, compute, render.
void BM_YearReport(benchmark::State& state) {
  const Fleet& fleet = TheFleet();
  const Format format = static_cast<Format>(state.range(0));
  const ReportQuery q = YearQuery(format);
  size_t bytes = 0;
  for (auto _ : state) {
    Result<RenderedReport> r = RenderReport(q);
    if (!r.ok()) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    bytes = r->body.size();
    benchmark::DoNotOptimize(r->body.data());
  }
  state.counters["output_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["nodes"] = static_cast<double>(fleet.nodes);
  state.SetLabel(std::string(ToString(format)) + ", a year, by day x team x capacity type");
}
BENCHMARK(BM_YearReport)
    ->Arg(static_cast<int>(Format::kJson))
    ->Arg(static_cast<int>(Format::kCsv))
    ->Arg(static_cast<int>(Format::kHtml))
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()  // both threads of the split usage scan
    ->UseRealTime();

// The facts alone, with the answer checked.
void BM_YearFacts(benchmark::State& state) {
  const Fleet& fleet = TheFleet();
  const ReportQuery q = YearQuery(Format::kJson);
  AuditReaderOptions options;
  options.memory_mapped = true;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(q.db_path, options);
  if (!reader.ok()) {
    state.SkipWithError(reader.error().ToString().c_str());
    return;
  }
  double total = 0;
  size_t lines = 0;
  for (auto _ : state) {
    Result<CostFacts> f = BuildCostFacts(**reader, q);
    if (!f.ok()) {
      state.SkipWithError(f.error().ToString().c_str());
      return;
    }
    total = f->total.cost_usd;
    lines = f->lines.size();
    state.counters["usage_rows"] = static_cast<double>(f->usage_rows);
  }
  if (std::fabs(total - fleet.expected_usd) > 1e-9 * fleet.expected_usd) {
    char msg[160];
    std::snprintf(msg, sizeof(msg), "wrong answer: report $%.6f, bill $%.6f", total, fleet.expected_usd);
    state.SkipWithError(msg);
    return;
  }
  state.counters["total_usd"] = total;
  state.counters["lines"] = static_cast<double>(lines);
}
BENCHMARK(BM_YearFacts)->Unit(benchmark::kMillisecond)->UseRealTime();

// The floor: SQLite stepping through every usage row of the year, nothing done
// with them.
void BM_YearUsageScanOnly(benchmark::State& state) {
  AuditReaderOptions options;
  options.memory_mapped = true;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(TheFleet().path, options);
  if (!reader.ok()) {
    state.SkipWithError(reader.error().ToString().c_str());
    return;
  }
  int64_t rows = 0;
  for (auto _ : state) {
    rows = 0;
    Status s = (*reader)->ForEachUsage(Start(), End(), [&](const UsageView& u) {
      rows += static_cast<int64_t>(u.instance_id.size() > 0);
    });
    if (!s.ok()) {
      state.SkipWithError(s.error().ToString().c_str());
      return;
    }
  }
  state.counters["usage_rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_YearUsageScanOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

// FOCUS rows are one per node, day and price: a month of them.
void BM_MonthFocus(benchmark::State& state) {
  ReportQuery q = YearQuery(Format::kFocus);
  q.from = FromUnixSeconds(ToUnixSeconds(Start()) + 334 * kDay);  // 2026-11-01
  size_t bytes = 0;
  for (auto _ : state) {
    Result<RenderedReport> r = RenderReport(q);
    if (!r.ok()) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    bytes = r->body.size();
  }
  state.counters["output_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_MonthFocus)->Unit(benchmark::kMillisecond)->UseRealTime();

// A fleet report over N year-sized stores (the year's file N times, as
// clusters named apart: the same work as N clusters' files), read
// `parallelism` at a time; a fleet of one is the single-store report through
// the fleet path. The answer is checked: the fleet's total is N bills.
void BM_FleetYearReport(benchmark::State& state) {
  const Fleet& fleet = TheFleet();
  const int stores = static_cast<int>(state.range(0));
  const int parallelism = static_cast<int>(state.range(1));
  const ReportQuery q = YearQuery(Format::kJson);
  std::vector<FleetStore> clusters;
  for (int i = 0; i < stores; ++i) clusters.push_back({fleet.path, "cluster-" + std::to_string(i + 1)});
  std::string total;
  for (auto _ : state) {
    Result<RenderedReport> r = RenderFleetReport(clusters, q, parallelism);
    if (!r.ok()) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->body.data());
    const size_t at = r->body.find("\"cost_usd\": ", r->body.find("\"totals\": {\n    \"cost_usd\""));
    total = r->body.substr(at + 12, r->body.find(',', at) - at - 12);
  }
  const double want = std::round(fleet.expected_usd * 100.0) / 100.0 * stores;
  if (std::fabs(std::stod(total) - want) > 0.005 * stores) {
    state.SkipWithError(
        ("wrong answer: fleet $" + total + ", " + std::to_string(stores) + " bills $" + std::to_string(want))
            .c_str());
    return;
  }
  state.counters["stores"] = stores;
  state.counters["per_store_s"] =
      benchmark::Counter(stores, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetLabel("json, a year per store, " + std::to_string(parallelism) + " at a time");
}
BENCHMARK(BM_FleetYearReport)
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({2, 2})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace gpuscaler::report

BENCHMARK_MAIN();
