// Our own CSV formats: gpuscaler-jobs and gpuscaler-series (docs/traces.md).
#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>

#include "gpuscaler/model/instance.h"
#include "sim/traces/csv.h"
#include "sim/traces/readers_impl.h"

namespace gpuscaler::sim::internal {
namespace {

// Columns each format knows.
constexpr std::string_view kJobColumns[] = {
    "id",         "submit_s",           "submit",        "duration_s",     "gpus",
    "gpu_milli",  "mig_profile",        "gpu_models",    "min_gpu_memory_mib",
    "cpu_milli",  "memory_mib",         "class",         "priority",       "interruptible",
    "checkpoint_interval_s", "restart_cost_s", "zones",  "instance_types", "capacity_type",
    "pool",
};

constexpr std::string_view kSeriesColumns[] = {"t_s", "t", "class", "value", "unit"};

// The header of our formats: only `known` columns (a typo such as "gpu"
// for "gpus" must not silently become a default), and exactly one time
// column, `relative` seconds or `absolute` RFC 3339. Returns the time
// column's index (-1 after a failure); *is_absolute says which.
template <size_t N>
int CheckHeader(csv::Table& table, const std::string_view (&known)[N], std::string_view relative,
                std::string_view absolute, bool* is_absolute) {
  for (const std::string& column : table.header()) {
    if (std::find(std::begin(known), std::end(known), column) == std::end(known)) {
      table.FailHeader("unknown column '" + column + "'");
    }
  }
  const int rel = table.Find(relative);
  const int abs = table.Find(absolute);
  if (rel >= 0 && abs >= 0) {
    table.FailHeader("columns '" + std::string(relative) + "' and '" + std::string(absolute) +
                     "' are exclusive");
  } else if (rel < 0 && abs < 0) {
    table.FailHeader("missing column '" + std::string(relative) + "' (or '" + std::string(absolute) + "')");
  }
  *is_absolute = abs >= 0;
  return *is_absolute ? abs : rel;
}

// Optional non-negative integer column; empty or absent gives `fallback`.
int64_t NonNegative(csv::Table& t, int col, int64_t fallback, int64_t max = static_cast<int64_t>(kMaxJobQuantity)) {
  if (col < 0 || t.Empty(col)) return fallback;
  return t.IntIn(col, 0, max);
}

int64_t NonNegativeSeconds(csv::Table& t, int col, int64_t fallback) {
  if (col < 0 || t.Empty(col)) return fallback;
  const double v = t.Double(col);
  if (!t.failed() && v < 0) t.Fail(col, "must be >= 0, got '" + std::string(t.Field(col)) + "'");
  return csv::Table::Round(v);
}

}  // namespace

void ReadGpuscalerJobs(csv::Table& t, const TraceOptions& o, Trace* trace) {
  bool absolute = false;
  const int c_submit = CheckHeader(t, kJobColumns, "submit_s", "submit", &absolute);
  const int c_id = t.Require("id");
  const int c_duration = t.Require("duration_s");
  const int c_gpus = t.Find("gpus"), c_milli = t.Find("gpu_milli"), c_mig = t.Find("mig_profile");
  const int c_models = t.Find("gpu_models"), c_min_mem = t.Find("min_gpu_memory_mib");
  const int c_cpu = t.Find("cpu_milli"), c_mem = t.Find("memory_mib"), c_class = t.Find("class");
  const int c_priority = t.Find("priority"), c_interruptible = t.Find("interruptible");
  const int c_checkpoint = t.Find("checkpoint_interval_s"), c_restart = t.Find("restart_cost_s");
  const int c_zones = t.Find("zones"), c_types = t.Find("instance_types");
  const int c_capacity = t.Find("capacity_type"), c_pool = t.Find("pool");

  std::unordered_map<std::string, int64_t> first_line;
  const size_t expected_rows = t.EstimatedRows();
  first_line.reserve(expected_rows);
  trace->jobs.reserve(expected_rows);
  while (t.Next()) {
    if (t.Empty(c_id)) {
      t.Fail(c_id, "empty");
      break;
    }
    std::string id(t.Field(c_id));
    int64_t submit = 0;
    if (t.Empty(c_submit)) {
      t.Fail(c_submit, "empty");
    } else if (absolute) {
      submit = t.Timestamp(c_submit);
    } else {
      submit = NonNegativeSeconds(t, c_submit, 0);
    }
    const double duration_s = t.Empty(c_duration) ? 0 : t.Double(c_duration);
    if (!t.failed() && csv::Table::Round(duration_s) <= 0) {
      t.Fail(c_duration, "must be > 0, got '" + std::string(t.Field(c_duration)) + "'");
    }
    DemandUnit unit =
        MakeUnit(id, c_class >= 0 && !t.Empty(c_class) ? std::string(t.Field(c_class)) : "default",
                 Seconds(csv::Table::Round(duration_s)));
    unit.gpus = static_cast<int>(NonNegative(t, c_gpus, 0, kMaxJobGpus));
    unit.gpu_milli = static_cast<int>(NonNegative(t, c_milli, 0, kMaxJobGpus * 1000));
    unit.mig_profile = std::string(t.Field(c_mig));
    unit.gpu_models = csv::SplitList(t.Field(c_models), '|');
    unit.min_gpu_memory_mib = NonNegative(t, c_min_mem, 0);
    unit.cpu_milli = NonNegative(t, c_cpu, 0);
    unit.memory_mib = NonNegative(t, c_mem, 0);
    if (c_priority >= 0 && !t.Empty(c_priority)) unit.priority = static_cast<int>(t.IntIn(c_priority, -1'000'000'000, 1'000'000'000));
    if (c_interruptible >= 0 && !t.Empty(c_interruptible)) unit.interruptible = t.Bool(c_interruptible);
    unit.checkpoint_interval = Seconds(NonNegativeSeconds(t, c_checkpoint, unit.checkpoint_interval.count()));
    unit.restart_cost = Seconds(NonNegativeSeconds(t, c_restart, unit.restart_cost.count()));
    unit.zones = csv::SplitList(t.Field(c_zones), '|');
    unit.instance_types = csv::SplitList(t.Field(c_types), '|');
    if (c_capacity >= 0 && !t.Empty(c_capacity)) {
      unit.capacity_type = ParseCapacityType(t.Field(c_capacity));
      if (!unit.capacity_type) {
        t.Fail(c_capacity, csv::Quote(t.Field(c_capacity)) + " is not on-demand or spot");
      }
    }
    unit.pool = std::string(t.Field(c_pool));
    if (t.failed()) break;
    if (unit.gpu_milli >= 1000) {
      t.Fail(c_milli, "must be below 1000 (use gpus for whole GPUs), got '" +
                          std::string(t.Field(c_milli)) + "'");
    } else if (unit.gpu_milli > 0 && unit.gpus > 0) {
      t.Fail(c_milli, "set with gpus = " + std::to_string(unit.gpus) + "; a job asks for whole GPUs or a fraction");
    } else if (!unit.mig_profile.empty() && (unit.gpus > 0 || unit.gpu_milli > 0)) {
      t.Fail(c_mig, "set with gpus or gpu_milli; a MIG job asks for one instance of '" + unit.mig_profile +
                        "' only");
    }
    auto [it, inserted] = first_line.emplace(id, t.line());
    if (!inserted) {
      t.Fail(c_id, "duplicate id '" + id + "' (first on line " + std::to_string(it->second) + ")");
    }
    if (t.failed()) break;
    const Seconds duration = unit.expected_runtime;
    trace->jobs.push_back({Seconds(submit), duration, std::move(unit)});
    ++trace->stats.rows_used;
  }
  if (t.failed()) return;
  FinishTrace(trace, o, absolute ? DefaultOrigin::kEarliest : DefaultOrigin::kZero, absolute);
}

void ReadGpuscalerSeries(csv::Table& t, const TraceOptions& o, Trace* trace) {
  bool absolute = false;
  const int c_t = CheckHeader(t, kSeriesColumns, "t_s", "t", &absolute);
  const int c_class = t.Require("class");
  const int c_value = t.Require("value");
  const int c_unit = t.Find("unit");

  // (class, unit) -> series index; (series, t) -> line, to reject a second
  // value for the same instant.
  std::map<std::pair<std::string, std::string>, size_t> index;
  std::vector<std::unordered_map<int64_t, int64_t>> seen;
  while (t.Next()) {
    int64_t at = 0;
    if (t.Empty(c_t)) {
      t.Fail(c_t, "empty");
    } else {
      at = absolute ? t.Timestamp(c_t) : NonNegativeSeconds(t, c_t, 0);
    }
    if (t.Empty(c_class)) t.Fail(c_class, "empty");
    const double value = t.Double(c_value);
    if (!t.failed() && value < 0) t.Fail(c_value, "must be >= 0, got '" + std::string(t.Field(c_value)) + "'");
    if (t.failed()) break;
    std::string unit = c_unit >= 0 && !t.Empty(c_unit) ? std::string(t.Field(c_unit)) : "gpus";
    auto key = std::make_pair(std::string(t.Field(c_class)), std::move(unit));
    auto [it, inserted] = index.emplace(key, trace->series.size());
    if (inserted) {
      trace->series.push_back({key.first, key.second, {}});
      seen.emplace_back();
    }
    auto [line_it, fresh] = seen[it->second].emplace(at, t.line());
    if (!fresh) {
      t.Fail(c_t, "second value for class '" + key.first + "' at '" + std::string(t.Field(c_t)) +
                      "' (first on line " + std::to_string(line_it->second) + ")");
      break;
    }
    trace->series[it->second].points.push_back({Seconds(at), value});
    ++trace->stats.rows_used;
  }
  if (t.failed()) return;
  FinishTrace(trace, o, absolute ? DefaultOrigin::kEarliest : DefaultOrigin::kZero, absolute);
}

}  // namespace gpuscaler::sim::internal
