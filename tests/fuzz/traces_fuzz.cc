// Fuzzes the trace readers: our job and series CSVs and every public trace
// and spot-market format of sim/trace_readers.h. The first input byte picks
// the format, the second a few options (window, max_jobs, multi-node split,
// CPU-only skip, bins); the rest is the file.
//
// Invariants (sim/trace_readers.h): never throws; a malformed file is
// kInvalidInput "file:LINE: ..." (or kConfig for contradictory options);
// output comes in the documented order; without window or max_jobs every
// data row is either used or counted as skipped; no negative duration.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sim/trace_readers.h"

namespace {

namespace sim = gpuscaler::sim;

constexpr const char* kFile = "fuzz.csv";

void CheckError(const gpuscaler::Error& e) {
  if (e.category() == gpuscaler::ErrorCategory::kConfig) return;
  FUZZ_CHECK(e.category() == gpuscaler::ErrorCategory::kInvalidInput, "category of %s", e.ToString().c_str());
  const std::string& m = e.message();
  FUZZ_CHECK(m.rfind(std::string(kFile) + ":", 0) == 0, "error without the file: %s", m.c_str());
  // "fuzz.csv:LINE: ..." with LINE >= 1.
  const size_t start = std::string_view(kFile).size() + 1;
  size_t end = start;
  while (end < m.size() && m[end] >= '0' && m[end] <= '9') ++end;
  FUZZ_CHECK(end > start && end < m.size() && m[end] == ':' && m.substr(start, end - start) != "0",
             "error without a line: %s", m.c_str());
}

int64_t SkippedSum(const sim::ReadStats& s) {
  int64_t n = 0;
  for (const auto& [reason, count] : s.skipped) {
    FUZZ_CHECK(count > 0, "skipped '%s' %lld", reason.c_str(), static_cast<long long>(count));
    n += count;
  }
  return n;
}

template <typename T>
bool ByTime(const std::vector<T>& v) {
  return std::is_sorted(v.begin(), v.end(), [](const T& a, const T& b) { return a.t < b.t; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t pick = data[0];
  const uint8_t opt = data[1];
  std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const bool windowed = opt & 1;

  const auto& trace_names = sim::TraceFormatNames();
  const auto& market_names = sim::MarketFormatNames();
  const size_t n = trace_names.size() + market_names.size();
  const size_t which = pick % n;

  if (which < trace_names.size()) {
    sim::TraceOptions o;
    if (windowed) {
      o.window_start = gpuscaler::Seconds(60);
      o.window_end = gpuscaler::Seconds(3600);
      o.max_jobs = 5;
    }
    o.multi_node = (opt & 2) ? sim::MultiNodeJobs::kWhole
                             : ((opt & 16) ? sim::MultiNodeJobs::kSplit : sim::MultiNodeJobs::kGang);
    o.skip_cpu_only = opt & 4;
    if (opt & 8) o.bin = gpuscaler::Seconds(60);
    const auto format = sim::ParseTraceFormat(trace_names[which]);
    FUZZ_CHECK(format.has_value(), "format name %s", std::string(trace_names[which]).c_str());
    gpuscaler::Result<sim::Trace> t = sim::ParseTrace(std::move(text), kFile, *format, o);
    if (!t.ok()) {
      CheckError(t.error());
      return 0;
    }
    FUZZ_CHECK(std::is_sorted(t->jobs.begin(), t->jobs.end(),
                              [](const sim::TraceJob& a, const sim::TraceJob& b) {
                                return a.submit != b.submit ? a.submit < b.submit : a.unit.id < b.unit.id;
                              }),
               "jobs not ordered by (submit, id)");
    for (const sim::TraceJob& j : t->jobs) {
      FUZZ_CHECK(j.duration.count() >= 0, "job %s duration %lld", j.unit.id.c_str(),
                 static_cast<long long>(j.duration.count()));
      FUZZ_CHECK(j.submit.count() >= 0, "job %s submitted before the start", j.unit.id.c_str());
    }
    for (const sim::DemandSeries& s : t->series) FUZZ_CHECK(ByTime(s.points), "series points not ascending");
    const int64_t skipped = SkippedSum(t->stats);
    if (!windowed)
      FUZZ_CHECK(t->stats.rows_read == t->stats.rows_used + skipped, "rows read %lld, used %lld, skipped %lld",
                 static_cast<long long>(t->stats.rows_read), static_cast<long long>(t->stats.rows_used),
                 static_cast<long long>(skipped));
    return 0;
  }

  sim::MarketOptions o;
  if (windowed) {
    o.window_start = gpuscaler::Seconds(60);
    o.window_end = gpuscaler::Seconds(3600);
  }
  o.include_on_demand = opt & 2;
  if (opt & 4) o.available_nodes_when_up = 3;
  if (opt & 8) o.also_instance_types = {"p3.8xlarge"};
  const auto format = sim::ParseMarketFormat(market_names[which - trace_names.size()]);
  FUZZ_CHECK(format.has_value(), "market format name");
  gpuscaler::Result<sim::SpotMarket> m = sim::ParseSpotMarket(std::move(text), kFile, *format, o);
  if (!m.ok()) {
    CheckError(m.error());
    return 0;
  }
  FUZZ_CHECK(ByTime(m->prices), "prices not ascending");
  FUZZ_CHECK(ByTime(m->availability), "availability not ascending");
  FUZZ_CHECK(ByTime(m->interruptions), "interruptions not ascending");
  (void)SkippedSum(m->stats);
  return 0;
}
