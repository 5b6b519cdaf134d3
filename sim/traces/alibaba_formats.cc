// Alibaba cluster traces: GPU v2023 openb pods, GPU v2025 DLRM instances,
// and the v2026 GenAI monitoring series (docs/traces.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/traces/csv.h"
#include "sim/traces/readers_impl.h"

namespace gpuscaler::sim::internal {
namespace {

constexpr int kLatencyPriority = 1;

// Non-negative quantity read as a double (the sources write "120.0").
double NonNegativeNumber(csv::Table& t, int col, double max = kMaxJobQuantity) {
  return t.NumberIn(col, 0, max);
}

}  // namespace

void ReadOpenb(csv::Table& t, const TraceOptions& o, Trace* trace) {
  const int c_name = t.Require("name"), c_cpu = t.Require("cpu_milli"), c_mem = t.Require("memory_mib");
  const int c_num_gpu = t.Require("num_gpu"), c_milli = t.Require("gpu_milli"), c_spec = t.Require("gpu_spec");
  const int c_qos = t.Require("qos"), c_created = t.Require("creation_time");
  const int c_deleted = t.Require("deletion_time"), c_scheduled = t.Require("scheduled_time");

  trace->jobs.reserve(t.EstimatedRows());
  int64_t never_scheduled = 0, unmapped_gpu = 0;
  while (t.Next()) {
    if (t.Empty(c_name)) t.Fail(c_name, "empty");
    const int64_t cpu_milli = t.Round(NonNegativeNumber(t, c_cpu));
    const int64_t memory_mib = t.Round(NonNegativeNumber(t, c_mem));
    const int64_t num_gpu = t.Round(NonNegativeNumber(t, c_num_gpu, kMaxJobGpus));
    const int64_t gpu_milli = t.Round(NonNegativeNumber(t, c_milli));
    if (!t.failed() && gpu_milli > 1000) {
      t.Fail(c_milli, "must be <= 1000, got '" + std::string(t.Field(c_milli)) + "'");
    }
    if (!t.failed() && num_gpu == 0 && gpu_milli > 0) {
      t.Fail(c_milli, csv::Quote(t.Field(c_milli)) + " with num_gpu 0");
    }
    const std::string_view qos = t.Field(c_qos);
    const bool latency = qos == "LS" || qos == "Guaranteed";
    if (!t.failed() && !latency && qos != "BE" && qos != "Burstable") {
      t.Fail(c_qos, csv::Quote(qos) + " is not LS, BE, Burstable or Guaranteed");
    }
    const int64_t created = t.SecondsValue(c_created);
    if (t.failed()) break;
    if (t.Empty(c_deleted)) {
      Skip(&trace->stats, "no deletion_time");
      continue;
    }
    const int64_t deleted = t.SecondsValue(c_deleted);
    int64_t started = created;
    if (t.Empty(c_scheduled)) {
      ++never_scheduled;
    } else {
      started = t.SecondsValue(c_scheduled);
    }
    if (t.failed()) break;
    if (deleted - started <= 0) {
      Skip(&trace->stats, "non-positive duration");
      continue;
    }
    if (num_gpu == 0 && o.skip_cpu_only) {
      Skip(&trace->stats, "cpu-only");
      continue;
    }
    DemandUnit unit = MakeUnit(std::string(t.Field(c_name)),
                               latency ? o.latency_sensitive_class : o.best_effort_class,
                               Seconds(deleted - started));
    if (num_gpu == 1 && gpu_milli > 0 && gpu_milli < 1000) {
      unit.gpu_milli = static_cast<int>(gpu_milli);
    } else {
      unit.gpus = static_cast<int>(num_gpu);
    }
    unit.cpu_milli = cpu_milli;
    unit.memory_mib = memory_mib;
    unit.interruptible = !latency;
    unit.priority = latency ? kLatencyPriority : 0;
    // A list naming an undisclosed type admits a GPU we cannot name, so it
    // constrains nothing we can check.
    bool any = false;
    for (const std::string& spec : csv::SplitList(t.Field(c_spec), '|')) {
      std::string model = AlibabaGpuToCatalog(spec);
      if (model.empty()) {
        any = true;
        continue;
      }
      if (model == spec) ++unmapped_gpu;
      if (std::find(unit.gpu_models.begin(), unit.gpu_models.end(), model) == unit.gpu_models.end()) {
        unit.gpu_models.push_back(std::move(model));
      }
    }
    if (any) unit.gpu_models.clear();
    unit.labels["qos"] = std::string(qos);
    ApplyJobOverrides(o, &unit);
    trace->jobs.push_back({Seconds(created), unit.expected_runtime, std::move(unit)});
    ++trace->stats.rows_used;
  }
  if (t.failed()) return;
  Warn(&trace->stats, never_scheduled,
       "pods have no scheduled_time; their duration counts from creation_time");
  Warn(&trace->stats, unmapped_gpu, "gpu_spec entries have no catalog equivalent and are kept as written");
  trace->behaviour_from_policy = BehaviourFromPolicy(o);
  FinishTrace(trace, o, DefaultOrigin::kEarliest, false);
}

void ReadDlrm(csv::Table& t, const TraceOptions& o, Trace* trace) {
  const int c_sn = t.Require("instance_sn"), c_role = t.Require("role"), c_app = t.Require("app_name");
  const int c_cpu = t.Require("cpu_request"), c_gpu = t.Require("gpu_request");
  const int c_mem = t.Require("memory_request"), c_created = t.Require("creation_time");
  const int c_scheduled = t.Require("scheduled_time"), c_deleted = t.Require("deletion_time");

  struct Pending {
    size_t job;
    int64_t started;
  };
  trace->jobs.reserve(t.EstimatedRows());
  std::vector<Pending> open_ended;  // no deletion_time: end filled in below
  int64_t latest = 0, existed = 0;
  while (t.Next()) {
    if (t.Empty(c_sn)) t.Fail(c_sn, "empty");
    const std::string_view role = t.Field(c_role);
    if (!t.failed() && role != "HN" && role != "CN") {
      t.Fail(c_role, csv::Quote(role) + " is not HN or CN");
    }
    const double cpu = NonNegativeNumber(t, c_cpu);
    const double gpu = NonNegativeNumber(t, c_gpu, kMaxJobGpus);
    const double memory_gib = NonNegativeNumber(t, c_mem);
    if (!t.failed() && gpu > 1 && gpu != std::floor(gpu)) {
      t.Fail(c_gpu, csv::Quote(t.Field(c_gpu)) + " is neither whole GPUs nor a fraction of one");
    }
    int64_t created = 0;
    if (t.Empty(c_created)) {
      ++existed;
    } else {
      created = t.SecondsValue(c_created);
    }
    const int64_t started = t.Empty(c_scheduled) ? created : t.SecondsValue(c_scheduled);
    const bool has_end = !t.Empty(c_deleted);
    const int64_t deleted = has_end ? t.SecondsValue(c_deleted) : 0;
    if (t.failed()) break;
    latest = std::max({latest, created, started, deleted});
    if (has_end && deleted - started <= 0) {
      Skip(&trace->stats, "non-positive duration");
      continue;
    }
    if (gpu == 0 && o.skip_cpu_only) {
      Skip(&trace->stats, "cpu-only");
      continue;
    }
    DemandUnit unit = MakeUnit(std::string(t.Field(c_sn)), o.latency_sensitive_class,
                               Seconds(has_end ? deleted - started : 0));
    if (gpu > 0 && gpu < 1) {
      unit.gpu_milli = static_cast<int>(std::max<int64_t>(1, t.Round(gpu * 1000)));
    } else {
      unit.gpus = static_cast<int>(gpu);
    }
    unit.cpu_milli = t.Round(cpu * 1000);
    unit.memory_mib = t.Round(memory_gib * 1024);
    unit.interruptible = false;
    unit.priority = kLatencyPriority;
    unit.labels["app"] = std::string(t.Field(c_app));
    unit.labels["role"] = std::string(role);
    ApplyJobOverrides(o, &unit);
    if (!has_end) open_ended.push_back({trace->jobs.size(), started});
    trace->jobs.push_back({Seconds(created), unit.expected_runtime, std::move(unit)});
    ++trace->stats.rows_used;
  }
  if (t.failed()) return;
  std::vector<TraceJob>& jobs = trace->jobs;
  const int64_t end = o.dlrm_end_s.value_or(latest);
  // Open-ended instances that would end at or before they start under the
  // given end are dropped like any other non-positive duration; indices
  // into jobs stay valid because erasure happens afterwards.
  std::vector<bool> drop(jobs.size(), false);
  for (const Pending& p : open_ended) {
    TraceJob& job = jobs[p.job];
    if (end - p.started <= 0) {
      drop[p.job] = true;
      continue;
    }
    job.duration = Seconds(end - p.started);
    job.unit.expected_runtime = job.duration;
  }
  int64_t dropped = 0;
  size_t w = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (drop[i]) {
      ++dropped;
      continue;
    }
    if (w != i) jobs[w] = std::move(jobs[i]);
    ++w;
  }
  jobs.resize(w);
  Skip(&trace->stats, "non-positive duration", dropped);
  trace->stats.rows_used -= dropped;
  Warn(&trace->stats, existed, "instances existed at trace start (no creation_time); submitted at 0");
  Warn(&trace->stats, static_cast<int64_t>(open_ended.size()) - dropped,
       "instances have no deletion_time; they run to the end of the trace at " + std::to_string(end) + " s");
  trace->behaviour_from_policy = BehaviourFromPolicy(o);
  FinishTrace(trace, o, DefaultOrigin::kEarliest, false);
}

namespace {

struct Sample {
  int64_t t;
  double value;
};

enum class BinRule {
  kMean,                // mean of all samples in the bin
  kSumPerTimestamp,  // sum per timestamp, mean over the bin's timestamps
};

// Aggregates samples into one point per bin. Bins start at the origin
// (options.origin_s or the earliest sample) so they line up with offset 0.
std::vector<DemandPoint> Aggregate(std::vector<Sample> samples, const TraceOptions& o, BinRule rule,
                                   double scale) {
  std::vector<DemandPoint> points;
  if (samples.empty()) return points;
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.t < b.t; });
  const int64_t origin = o.origin_s.value_or(samples.front().t);
  const int64_t width = o.bin.count();
  auto bin_of = [&](int64_t t) {
    if (width <= 0) return t;
    const int64_t d = t - origin;
    const int64_t q = d >= 0 ? d / width : -((-d + width - 1) / width);
    return origin + q * width;
  };
  size_t i = 0;
  while (i < samples.size()) {
    const int64_t bin = bin_of(samples[i].t);
    double sum = 0;
    int64_t count = 0, timestamps = 0;
    int64_t last_t = std::numeric_limits<int64_t>::min();
    for (; i < samples.size() && bin_of(samples[i].t) == bin; ++i) {
      sum += samples[i].value;
      ++count;
      if (samples[i].t != last_t) {
        ++timestamps;
        last_t = samples[i].t;
      }
    }
    const double v = rule == BinRule::kMean ? sum / static_cast<double>(count)
                                            : sum / static_cast<double>(timestamps);
    points.push_back({Seconds(bin), v * scale});
  }
  return points;
}

struct GenaiSpec {
  std::string unit;
  BinRule rule;
  double scale;
  double max_value;  // inclusive; larger is malformed
};

void ReadGenaiSeries(csv::Table& t, const TraceOptions& o, const GenaiSpec& spec, Trace* trace) {
  const int c_t = t.Require("timestamp_anon"), c_value = t.Require("value");
  std::vector<Sample> samples;
  while (t.Next()) {
    const int64_t at = t.SecondsValue(c_t);
    const double v = t.Double(c_value);
    if (!t.failed() && (v < 0 || v > spec.max_value)) {
      std::string range = spec.max_value == std::numeric_limits<double>::max()
                              ? "must be >= 0"
                              : "must be in [0, " + std::to_string(static_cast<int64_t>(spec.max_value)) + "]";
      t.Fail(c_value, range + ", got '" + std::string(t.Field(c_value)) + "'");
    }
    if (t.failed()) break;
    samples.push_back({at, v});
  }
  if (t.failed()) return;
  trace->stats.rows_used = static_cast<int64_t>(samples.size());
  DemandSeries series{o.series_class, spec.unit, Aggregate(std::move(samples), o, spec.rule, spec.scale)};
  if (!series.points.empty()) trace->series.push_back(std::move(series));
  FinishTrace(trace, o, DefaultOrigin::kEarliest, true);
}

}  // namespace

void ReadGenaiQueue(csv::Table& t, const TraceOptions& o, Trace* trace) {
  ReadGenaiSeries(t, o, {"jobs", BinRule::kMean, 1.0, std::numeric_limits<double>::max()}, trace);
}

void ReadGenaiQps(csv::Table& t, const TraceOptions& o, Trace* trace) {
  ReadGenaiSeries(t, o, {"qps", BinRule::kSumPerTimestamp, 1.0, std::numeric_limits<double>::max()}, trace);
}

void ReadGenaiDutyCycle(csv::Table& t, const TraceOptions& o, Trace* trace) {
  ReadGenaiSeries(t, o, {"utilization", BinRule::kMean, 0.01, 100.0}, trace);
}

}  // namespace gpuscaler::sim::internal
