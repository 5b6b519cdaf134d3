// What the simulator replays: job traces, demand series and spot-market data,
// read from our documented CSV format or from public trace formats
// (sim/traces/, docs/traces.md). Every reader rejects a malformed row with
// "file:line: message". Values only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::sim {

// One job (pod) of a trace. Times are offsets from the trace start.
struct TraceJob {
  Seconds submit{0};
  Seconds duration{0};  // running time it needs, excluding queueing
  // Shape and behaviour: gpus / gpu_milli / mig_profile, gpu_models,
  // cpu_milli, memory_mib, workload_class, priority, interruptible,
  // checkpoint_interval, restart_cost. `unit.id` is the job id.
  DemandUnit unit;
};

// Demand given as a level over time rather than as jobs (queue depth, GPUs
// asked for): the value holds from `t` until the next point.
struct DemandPoint {
  Seconds t{0};
  double value = 0;
};

struct DemandSeries {
  std::string workload_class;
  std::string unit;  // what `value` counts: "gpus" or "jobs"
  std::vector<DemandPoint> points;  // ascending t
};

// What a reader did with the input rows, so nothing is dropped silently.
struct ReadStats {
  int64_t rows_read = 0;  // data rows, header excluded
  // Rows that became (or fed) a job, point, risk or event, before the
  // window and max_jobs are applied.
  int64_t rows_used = 0;
  // What was dropped, by reason: rows the reader could not use ("no
  // deletion_time", "os not Linux", ...), so rows_read = rows_used + their
  // sum; and jobs or points the options cut ("outside window", "over
  // max_jobs"), counted as jobs/points (docs/traces.md).
  std::map<std::string, int64_t> skipped;
  // Things a replay should know about that are not errors, one sentence each
  // ("346 pods have no scheduled_time; duration counted from creation_time").
  std::vector<std::string> warnings;
};

struct Trace {
  std::string source;           // file name or scenario name
  std::vector<TraceJob> jobs;   // ascending submit, ties by id
  std::vector<DemandSeries> series;
  Seconds span{0};              // last submit or series point, from the start
  // The instant of offset 0, when the source has absolute times.
  std::optional<WallTime> start_time;
  ReadStats stats;
  // True when the jobs' interruptible, checkpoint_interval, restart_cost and
  // priority are a reader's per-format defaults (public formats say which
  // class a job is, not how it tolerates a move): a replay then takes them
  // from the policy class of the same name, as the daemon does for pending
  // work (ApplyClassBehaviour in sim/scenario.h). False for our job format,
  // whose rows carry them, and when TraceOptions overrides them.
  bool behaviour_from_policy = false;
};

// A spot (or on-demand) price in force from `t` on.
struct PricePoint {
  Seconds t{0};
  std::string instance_type;
  std::string zone;    // a zone, or a region when the source only has regions
  CapacityType capacity_type = CapacityType::kSpot;
  double usd_per_hour = 0;
};

// Spot capacity the market has for (type, zone) from `t` on: 0 means a
// launch gets a capacity error and running spot nodes are interrupted.
struct AvailabilityPoint {
  Seconds t{0};
  std::string instance_type;
  std::string zone;
  int available_nodes = 0;
};

// Per (type, region) spot risk and discount, e.g. from the AWS spot advisor.
struct SpotRisk {
  std::string instance_type;
  std::string region;
  double interruptions_per_hour = 0;
  double savings_fraction = 0;  // spot discount vs on-demand, in [0, 1)
};

// A spot interruption of one node of (type, zone) at `t` (event traces).
struct InterruptionEvent {
  Seconds t{0};
  std::string instance_type;
  std::string zone;
};

struct SpotMarket {
  std::string source;
  std::vector<PricePoint> prices;              // ascending t
  std::vector<AvailabilityPoint> availability;  // ascending t
  std::vector<SpotRisk> risks;
  std::vector<InterruptionEvent> interruptions;  // ascending t
  std::optional<WallTime> start_time;  // instant of offset 0, if known
  ReadStats stats;
};

}  // namespace gpuscaler::sim
