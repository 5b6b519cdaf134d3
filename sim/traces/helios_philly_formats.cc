// Helios (SenseTime) Earth per-VC minute series and Microsoft Philly sampled
// jobs (docs/traces.md).
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "sim/traces/csv.h"
#include "sim/traces/readers_impl.h"

namespace gpuscaler::sim::internal {

void ReadHeliosMinute(csv::Table& t, const TraceOptions& o, Trace* trace) {
  const int c_vc = t.Require("vc"), c_time = t.Require("time");
  const int c_running = t.Require("running_gpu_num"), c_pending = t.Require("pending_gpu_num");
  std::map<std::string, size_t, std::less<>> index;  // vc -> series
  std::vector<std::unordered_map<int64_t, int64_t>> seen;  // per series: t -> line
  // Rows come in runs of one minute per VC; parse each time string once.
  std::string last_time;
  int64_t last_at = 0;
  while (t.Next()) {
    const std::string_view vc = t.Field(c_vc);
    if (vc.empty()) t.Fail(c_vc, "empty");
    int64_t at = last_at;
    if (t.Field(c_time) != last_time) {
      at = t.Timestamp(c_time);
      if (!t.failed()) {
        last_time = std::string(t.Field(c_time));
        last_at = at;
      }
    }
    const int64_t running = t.Int(c_running);
    const int64_t pending = t.Int(c_pending);
    if (!t.failed() && running < 0) t.Fail(c_running, "must be >= 0, got '" + std::string(t.Field(c_running)) + "'");
    if (!t.failed() && pending < 0) t.Fail(c_pending, "must be >= 0, got '" + std::string(t.Field(c_pending)) + "'");
    if (t.failed()) break;
    auto it = index.find(vc);
    if (it == index.end()) {
      it = index.emplace(std::string(vc), trace->series.size()).first;
      trace->series.push_back({std::string(vc), "gpus", {}});
      seen.emplace_back();
    }
    auto [line_it, fresh] = seen[it->second].emplace(at, t.line());
    if (!fresh) {
      t.Fail(c_time, "second row for vc '" + std::string(vc) + "' at '" + std::string(t.Field(c_time)) +
                         "' (first on line " + std::to_string(line_it->second) + ")");
      break;
    }
    trace->series[it->second].points.push_back({Seconds(at), static_cast<double>(running + pending)});
    ++trace->stats.rows_used;
  }
  if (t.failed()) return;
  FinishTrace(trace, o, DefaultOrigin::kEarliest, true);
}

void ReadPhillyJobs(csv::Table& t, const TraceOptions& o, Trace* trace) {
  const int c_id = t.Require("jobid"), c_submit = t.Require("submitted_time");
  const int c_runtime = t.Require("runtime_min"), c_gpus = t.Require("num_gpus");
  const int c_machines = t.Find("num_machines"), c_status = t.Find("status"), c_vc = t.Find("vc");

  int64_t split = 0, uneven = 0;
  while (t.Next()) {
    if (t.Empty(c_id)) t.Fail(c_id, "empty");
    const int64_t submit = t.Timestamp(c_submit);
    const double runtime_min = t.Double(c_runtime);
    const int64_t gpus = t.IntIn(c_gpus, 0, kMaxJobGpus);
    int64_t machines = 1;
    if (c_machines >= 0 && !t.Empty(c_machines)) {
      machines = t.Int(c_machines);
      if (!t.failed() && machines < 1) {
        t.Fail(c_machines, "must be >= 1, got '" + std::string(t.Field(c_machines)) + "'");
      }
    }
    if (t.failed()) break;
    const int64_t duration = csv::Table::Round(runtime_min * 60);
    if (duration <= 0) {
      Skip(&trace->stats, "non-positive duration");
      continue;
    }
    if (gpus == 0) {
      Skip(&trace->stats, "no GPUs");
      continue;
    }
    int64_t parts = 1;
    if (o.multi_node != MultiNodeJobs::kWhole && machines > 1) {
      if (gpus % machines == 0) {
        parts = machines;
        ++split;
      } else {
        ++uneven;
      }
    }
    const std::string id(t.Field(c_id));
    for (int64_t k = 0; k < parts; ++k) {
      DemandUnit unit = MakeUnit(parts == 1 ? id : id + "/" + std::to_string(k), o.training_class,
                                 Seconds(duration));
      unit.gpus = static_cast<int>(gpus / parts);
      unit.interruptible = true;
      if (parts > 1 && o.multi_node == MultiNodeJobs::kGang) {
        unit.gang = GangMembership{id, static_cast<int>(parts), /*same_zone=*/true, /*same_instance_type=*/false};
      }
      if (c_status >= 0) unit.labels["status"] = std::string(t.Field(c_status));
      if (c_vc >= 0) unit.labels["vc"] = std::string(t.Field(c_vc));
      ApplyJobOverrides(o, &unit);
      trace->jobs.push_back({Seconds(submit), unit.expected_runtime, std::move(unit)});
    }
    ++trace->stats.rows_used;
  }
  if (t.failed()) return;
  Warn(&trace->stats, split,
       o.multi_node == MultiNodeJobs::kGang
           ? "multi-machine jobs became gangs of one job per machine, started and stopped together"
           : "multi-machine jobs were split into one job per machine, each started and stopped alone");
  Warn(&trace->stats, uneven, "multi-machine jobs have GPUs not divisible by machines; kept whole");
  trace->behaviour_from_policy = BehaviourFromPolicy(o);
  FinishTrace(trace, o, DefaultOrigin::kEarliest, true);
}

}  // namespace gpuscaler::sim::internal
