// Internal to the trace readers: one read function per format, and the
// shared steps every reader ends with (origin, window, sort, max_jobs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/status.h"
#include "sim/trace.h"
#include "sim/trace_readers.h"
#include "sim/traces/csv.h"

namespace gpuscaler::sim::internal {

// A reader gets the file as a table (its header read) and an output whose
// source is set; it looks its columns up, reads the rows into the output,
// then calls FinishTrace / FinishMarket (before that, times are raw source
// seconds: Unix seconds for absolute formats). Every problem is recorded on
// the table (Require, Fail, FailHeader); the first is the parse's error and
// the output is then dropped. The caller sets stats.rows_read.
using TraceReader = void(csv::Table& t, const TraceOptions& o, Trace* trace);
using MarketReader = void(csv::Table& t, const MarketOptions& o, SpotMarket* market);

// gpuscaler_formats.cc, alibaba_formats.cc, helios_philly_formats.cc:
TraceReader ReadGpuscalerJobs, ReadGpuscalerSeries;
TraceReader ReadOpenb, ReadDlrm, ReadGenaiQueue, ReadGenaiQps, ReadGenaiDutyCycle;
TraceReader ReadHeliosMinute, ReadPhillyJobs;
// market_formats.cc:
MarketReader ReadCblAvailability, ReadParcaeEvents, ReadAwsSpotAdvisor, ReadAwsSpotPriceHistory,
    ReadGcpSpotPrices;

// How a format picks offset 0 when options.origin_s is unset.
enum class DefaultOrigin {
  kZero,      // the source's own zero (our relative formats)
  kEarliest,  // the earliest job submit or series point
};

// Rebases raw times to the origin, sets start_time when `absolute_times`,
// applies the window and max_jobs (counting what they drop in stats), sorts
// jobs (submit, id) and series (class, unit; points by t), and sets span.
void FinishTrace(Trace* trace, const TraceOptions& o, DefaultOrigin origin, bool absolute_times);
// Same for a market. Offset 0 is options.origin_s, else `earliest_row`: the
// earliest raw time of any row, used or not (a Parcae file starts with "add"
// rows that yield no event but still mark the trace start).
void FinishMarket(SpotMarket* market, const MarketOptions& o, bool absolute_times,
                  std::optional<int64_t> earliest_row);

inline void Skip(ReadStats* stats, const std::string& reason, int64_t n = 1) {
  if (n > 0) stats->skipped[reason] += n;
}

// A warning "<n> <sentence>" when n > 0.
inline void Warn(ReadStats* stats, int64_t n, const std::string& sentence) {
  if (n > 0) stats->warnings.push_back(std::to_string(n) + " " + sentence);
}

// Largest quantities one job may ask for. Far beyond any machine, so no
// real trace hits them; they reject garbage and keep every conversion to
// int defined ("1e30" GPUs would overflow the cast).
inline constexpr int64_t kMaxJobGpus = 1 << 20;
inline constexpr double kMaxJobQuantity = 1e12;  // milli-CPU, MiB, GiB

// A DemandUnit with the fields every reader sets; expected_runtime is the
// job's real duration (sim::Scenario::runtimes_known says whether the planner is told it).
DemandUnit MakeUnit(std::string id, std::string workload_class, Seconds duration);
// Applies TraceOptions::interruptible / checkpoint_interval to a public-format job.
void ApplyJobOverrides(const TraceOptions& o, DemandUnit* unit);
// Trace::behaviour_from_policy for a public job format read with `o`: true
// unless the options override the jobs' behaviour.
inline bool BehaviourFromPolicy(const TraceOptions& o) { return !o.interruptible && !o.checkpoint_interval; }

}  // namespace gpuscaler::sim::internal
