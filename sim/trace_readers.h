// Trace readers: turn a job trace, a demand series or spot-market data on disk
// into the value types of sim/trace.h. Formats and their column mappings are
// documented in docs/traces.md.
//
// Every reader
//  - requires a header row; a missing required column is
//    InvalidInput("file:1: missing column 'x'");
//  - rejects a malformed row with InvalidInput("file:LINE: column 'x': ...")
//    naming the column and the value (LINE counts physical lines, 1-based, so
//    a quoted field spanning lines moves the count on);
//  - accepts CRLF or LF line ends and RFC 4180 quoting;
//  - normalises times to offsets from the trace start (see TraceOptions::origin_s);
//  - drops rows it cannot use only for documented reasons, counting them in
//    `stats.skipped` (never silently);
//  - returns output in a deterministic order (jobs by submit then id; points,
//    events by t then key).
// A file that cannot be opened is kNotFound. Functions are pure apart from
// reading the named file, and are safe to call concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"
#include "sim/trace.h"

namespace gpuscaler::sim {

enum class TraceFormat {
  kGpuscalerJobs,          // "gpuscaler-jobs": our job CSV
  kGpuscalerSeries,        // "gpuscaler-series": our demand-series CSV
  kAlibabaOpenb,           // "alibaba-openb": Alibaba GPU v2023 openb pods
  kAlibabaDlrm,            // "alibaba-dlrm": Alibaba GPU v2025 DLRM instances
  kHeliosMinute,           // "helios-minute": Helios Earth per-VC minute series
  kPhillyJobs,             // "philly-jobs": Philly sampled jobs
  kAlibabaGenaiQueue,      // "alibaba-genai-queue": GenAI gateway queue size
  kAlibabaGenaiQps,        // "alibaba-genai-qps": GenAI per-container QPS
  kAlibabaGenaiDutyCycle,  // "alibaba-genai-duty-cycle": GenAI pod GPU duty cycle
};

enum class MarketFormat {
  kCblAvailability,     // "cbl-availability": Can't Be Late availability/preemption
  kParcaeEvents,        // "parcae-events": Parcae p3 add/remove events
  kAwsSpotAdvisor,      // "aws-spot-advisor": AWS Spot Instance Advisor bands
  kAwsSpotPriceHistory,  // "aws-spot-price-history": DescribeSpotPriceHistory rows
  kGcpSpotPrices,       // "gcp-spot-prices": GCP price change log
};

std::string_view ToString(TraceFormat format);
std::string_view ToString(MarketFormat format);
// By the names above; nullopt for anything else.
std::optional<TraceFormat> ParseTraceFormat(std::string_view name);
std::optional<MarketFormat> ParseMarketFormat(std::string_view name);
// Every name, in the enum's order, for --help and error messages.
const std::vector<std::string_view>& TraceFormatNames();
const std::vector<std::string_view>& MarketFormatNames();

enum class MultiNodeJobs { kGang, kSplit, kWhole };

// "gang", "split", "whole"; nullopt for anything else.
std::optional<MultiNodeJobs> ParseMultiNodeJobs(std::string_view text);

struct TraceOptions {
  // The source time that becomes offset 0: Unix seconds for formats with
  // absolute times (gpuscaler-jobs with `submit`, helios-minute, philly-jobs,
  // alibaba-genai-*), the source's own offset for formats with relative times
  // (gpuscaler-jobs with `submit_s`, gpuscaler-series with `t_s`,
  // alibaba-openb, alibaba-dlrm). Unset: our formats keep their offsets (or
  // take the earliest time when absolute), public formats take the earliest
  // time in the file (a second-window file then starts at 0).
  std::optional<int64_t> origin_s;
  // Keep jobs submitted, and series points in force, in [window_start,
  // window_end) (offsets after `origin_s`), then re-base so window_start is 0.
  // A series gets a point at 0 with the value in force at window_start.
  std::optional<Seconds> window_start;
  std::optional<Seconds> window_end;
  // Keep the first max_jobs jobs in output order; 0 keeps all.
  int64_t max_jobs = 0;

  // Class names the public formats map to (docs/traces.md).
  std::string latency_sensitive_class = "inference";  // openb LS/Guaranteed, dlrm
  std::string best_effort_class = "batch";            // openb BE/Burstable
  std::string training_class = "training";            // philly
  std::string series_class = "genai";                 // alibaba-genai-*
  // Overrides for every job read from a public format, when set.
  std::optional<bool> interruptible;
  std::optional<Seconds> checkpoint_interval;
  // alibaba-openb / alibaba-dlrm: drop jobs that ask for no GPU (counted
  // as skipped "cpu-only").
  bool skip_cpu_only = false;
  // alibaba-dlrm: where instances without deletion_time end, as a source
  // offset. Unset: the largest time in the file.
  std::optional<int64_t> dlrm_end_s;
  // philly-jobs: what a job on N machines becomes. kGang: N jobs
  // "<jobid>/<k>" with num_gpus / N GPUs each, members of gang <jobid> (one
  // zone), started and stopped together; kSplit: the same N jobs without the
  // gang, each started and stopped alone (the reading before gangs); kWhole:
  // one job with all its GPUs (on one node, which only fits up to a node's
  // GPUs). A job whose GPUs N does not divide is kept whole.
  MultiNodeJobs multi_node = MultiNodeJobs::kGang;
  // alibaba-genai-qps / -duty-cycle: bin width for aggregation; 0 bins by
  // the exact sample timestamp (the source samples every ~57 s in lockstep).
  Seconds bin{0};
};

struct MarketOptions {
  // As TraceOptions::origin_s: Unix seconds for aws-spot-price-history and
  // gcp-spot-prices, the source offset for cbl-availability (elapsed_s) and
  // parcae-events (seconds, not ms). Unset: the earliest time in the file.
  std::optional<int64_t> origin_s;
  std::optional<Seconds> window_start;  // as TraceOptions; prices and
  std::optional<Seconds> window_end;    // availability carry their value in
                                        // force at window_start to offset 0
  // cbl-availability columns named only by zone, and parcae-events.
  std::string instance_type = "p3.2xlarge";
  // cbl-availability: columns named only by zone also set the spot capacity
  // of these types (availability points only, no prices). A 1-node probe
  // that gets no p3.2xlarge in a zone says the zone has no V100 spot
  // capacity, so the other p3 sizes can follow it.
  std::vector<std::string> also_instance_types;
  // parcae-events: the source does not say which zone.
  std::string zone = "us-east-1a";
  // cbl-availability: when set, every non-zero count becomes this many nodes
  // (a 1-node probe that got an instance shows capacity exists, not that
  // only one node does). Unset: the source count.
  std::optional<int> available_nodes_when_up;
  // aws-spot-price-history: az_id -> zone name (e.g. "use1-az4" ->
  // "us-east-1a"); ids not in the map stay as they are.
  std::map<std::string, std::string> zone_names;
  // gcp-spot-prices: also emit on-demand PricePoints.
  bool include_on_demand = false;
};

// Reads `path` in `format`. Errors as in the file comment; kConfig for
// contradictory options (window_end <= window_start).
Result<Trace> ReadTrace(const std::string& path, TraceFormat format, const TraceOptions& options = {});
// Same, from text; `file_name` is used in messages and as Trace::source.
Result<Trace> ParseTrace(std::string text, const std::string& file_name, TraceFormat format,
                         const TraceOptions& options = {});

Result<SpotMarket> ReadSpotMarket(const std::string& path, MarketFormat format,
                                  const MarketOptions& options = {});
Result<SpotMarket> ParseSpotMarket(std::string text, const std::string& file_name, MarketFormat format,
                                   const MarketOptions& options = {});

// The catalog short name for an Alibaba GPU type ("V100M16" -> "v100-16gb",
// "T4" -> "t4", "A10" -> "a10g"); types with no catalog equivalent ("P100")
// come back unchanged; undisclosed types ("G1", "G2", "G3") and "" give "",
// meaning no constraint.
std::string AlibabaGpuToCatalog(std::string_view alibaba_name);

// The EC2 instance type of a Can't Be Late "<gpu>_<count>" column suffix
// ("v100_1" -> "p3.2xlarge"); nullopt when unknown.
std::optional<std::string> CblInstanceType(std::string_view gpu_count);

}  // namespace gpuscaler::sim
