// Internal to the trace readers: one parse function per format, and the
// shared steps every reader ends with (origin, window, sort, max_jobs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/status.h"
#include "sim/trace.h"
#include "sim/trace_readers.h"

namespace gpuscaler::sim::internal {

// Each takes the whole file text and the name used in messages. Times in the
// returned value are raw source seconds (Unix seconds for absolute formats);
// FinishTrace / FinishMarket rebase them.
Result<Trace> ParseGpuscalerJobs(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseGpuscalerSeries(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseOpenb(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseDlrm(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseHeliosMinute(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParsePhillyJobs(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseGenaiQueue(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseGenaiQps(std::string_view text, const std::string& file, const TraceOptions& o);
Result<Trace> ParseGenaiDutyCycle(std::string_view text, const std::string& file, const TraceOptions& o);

Result<SpotMarket> ParseCblAvailability(std::string_view text, const std::string& file, const MarketOptions& o);
Result<SpotMarket> ParseParcaeEvents(std::string_view text, const std::string& file, const MarketOptions& o);
Result<SpotMarket> ParseAwsSpotAdvisor(std::string_view text, const std::string& file, const MarketOptions& o);
Result<SpotMarket> ParseAwsSpotPriceHistory(std::string_view text, const std::string& file,
                                            const MarketOptions& o);
Result<SpotMarket> ParseGcpSpotPrices(std::string_view text, const std::string& file, const MarketOptions& o);

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

// Data rows a text probably holds (its line count), for reserving.
size_t EstimateRows(std::string_view text);

inline void Skip(ReadStats* stats, const std::string& reason, int64_t n = 1) {
  if (n > 0) stats->skipped[reason] += n;
}

// Largest quantities one job may ask for. Far beyond any machine, so no
// real trace hits them; they reject garbage and keep every conversion to
// int defined ("1e30" GPUs would overflow the cast).
inline constexpr int64_t kMaxJobGpus = 1 << 20;
inline constexpr double kMaxJobQuantity = 1e12;  // milli-CPU, MiB, GiB

// A DemandUnit with the fields every reader sets; expected_runtime is the
// job's real duration (the simulator may blur it).
DemandUnit MakeUnit(std::string id, std::string workload_class, Seconds duration);
// Applies TraceOptions::interruptible / checkpoint_interval to a public-format job.
void ApplyJobOverrides(const TraceOptions& o, DemandUnit* unit);
// Trace::behaviour_from_policy for a public job format read with `o`: true
// unless the options override the jobs' behaviour.
inline bool BehaviourFromPolicy(const TraceOptions& o) { return !o.interruptible && !o.checkpoint_interval; }

}  // namespace gpuscaler::sim::internal
