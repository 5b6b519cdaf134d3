// Parse speed of a Prometheus text scrape shaped like the NVIDIA DCGM
// exporter's (8 labels a line), at 1k and 10k lines: what one scrape of a
// large GPU fleet costs the daemon.
//
//   ./build/release/bench/signals/exposition_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "gpuscaler/signals/exposition.h"

namespace {

std::string DcgmScrape(int lines) {
  std::mt19937 rng(42);
  std::string text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
  for (int i = 0; i < lines; ++i) {
    text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(i % 8) + "\",UUID=\"GPU-" + std::to_string(i) +
            "\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node-" + std::to_string(i / 8) +
            "\",container=\"c\",namespace=\"ns\",pod=\"p-" + std::to_string(i) + "\"} " + std::to_string(rng() % 101) +
            "\n";
  }
  return text;
}

void BM_ParseDcgmScrape(benchmark::State& state) {
  const std::string text = DcgmScrape(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto parsed = gpuscaler::signals::ParseExposition(text);
    if (!parsed.ok() || parsed->samples.size() != static_cast<size_t>(state.range(0))) {
      state.SkipWithError("the scrape did not parse");
      break;
    }
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(state.range(0)),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseDcgmScrape)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
