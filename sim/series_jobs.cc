#include "sim/series_jobs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace gpuscaler::sim {
namespace {

struct Piece {
  Seconds submit{0};
  Seconds end{0};
  int gpus = 0;
  size_t seq = 0;  // emission order, the tie-break among equal submits
};

// One series' jobs, LIFO over the level's steps (see the header).
std::vector<Piece> Decompose(const DemandSeries& s, int max_gpus, size_t* seq) {
  std::vector<Piece> done;
  std::vector<Piece> open;  // a stack: the newest on top
  int64_t level = 0;
  for (const DemandPoint& p : s.points) {
    const int64_t value = std::max<int64_t>(0, std::llround(p.value));
    if (value > level) {
      int64_t rise = value - level;
      while (rise > 0) {
        const int g = static_cast<int>(std::min<int64_t>(rise, max_gpus));
        open.push_back({p.t, Seconds(0), g, 0});
        rise -= g;
      }
    } else if (value < level) {
      int64_t fall = level - value;
      while (fall > 0) {
        Piece& top = open.back();
        const int g = static_cast<int>(std::min<int64_t>(fall, top.gpus));
        done.push_back({top.submit, p.t, g, (*seq)++});
        fall -= g;
        top.gpus -= g;
        if (top.gpus == 0) open.pop_back();
      }
    }
    level = value;
  }
  if (!open.empty()) {
    const size_t n = s.points.size();
    const Seconds step = n >= 2 ? s.points[n - 1].t - s.points[n - 2].t : Seconds(60);
    const Seconds end = s.points.back().t + std::max(step, Seconds(1));
    // Oldest first, so the baseload's ids come first among equal submits.
    for (const Piece& o : open) done.push_back({o.submit, end, o.gpus, (*seq)++});
  }
  return done;
}

// The GPUs `value` of `unit` needs for class `cls`, or nullopt when the
// series cannot be converted (see the header).
std::optional<double> GpusFor(const std::string& unit, double value, const WorkloadClassPolicy& cls) {
  if (!cls.jobs_per_gpu_per_minute || *cls.jobs_per_gpu_per_minute <= 0) return std::nullopt;
  const double rate = *cls.jobs_per_gpu_per_minute;
  if (unit == "qps") return std::ceil(std::max(0.0, value) * 60.0 / rate - 1e-9);
  if (unit == "jobs") {
    const double minutes = cls.max_queue_wait && cls.max_queue_wait->count() > 0
                               ? static_cast<double>(cls.max_queue_wait->count()) / 60.0
                               : 1.0;
    return std::ceil(std::max(0.0, value) / (rate * minutes) - 1e-9);
  }
  return std::nullopt;
}

}  // namespace

Trace SeriesToJobs(Trace trace, const SeriesJobOptions& options) {
  if (options.policy != nullptr) {
    for (DemandSeries& s : trace.series) {
      if (s.unit != "qps" && s.unit != "jobs") continue;
      const WorkloadClassPolicy* cls = options.policy->FindClass(s.workload_class);
      if (cls == nullptr || !GpusFor(s.unit, 0, *cls)) continue;
      for (DemandPoint& p : s.points) p.value = *GpusFor(s.unit, p.value, *cls);
      trace.stats.warnings.push_back("series of class " + s.workload_class + " in " + s.unit +
                                     " became GPUs by the class's target.jobs_per_gpu_per_minute");
      s.unit = "gpus";
    }
  }
  const int max_gpus = std::max(1, options.max_gpus_per_job);
  std::vector<DemandSeries> kept;
  int64_t made = 0;
  int converted = 0;
  for (DemandSeries& s : trace.series) {
    if (s.unit != "gpus") {
      kept.push_back(std::move(s));
      continue;
    }
    ++converted;
    size_t seq = 0;
    std::vector<Piece> pieces = Decompose(s, max_gpus, &seq);
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return std::tie(a.submit, a.seq) < std::tie(b.submit, b.seq); });
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      TraceJob j;
      j.submit = p.submit;
      j.duration = p.end - p.submit;
      j.unit.id = s.workload_class + "/" + std::to_string(i);
      j.unit.workload_class = s.workload_class;
      j.unit.gpus = p.gpus;
      j.unit.interruptible = true;
      j.unit.expected_runtime = j.duration;
      trace.jobs.push_back(std::move(j));
    }
    made += static_cast<int64_t>(pieces.size());
  }
  trace.series = std::move(kept);
  if (converted == 0) return trace;
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return std::tie(a.submit, a.unit.id) < std::tie(b.submit, b.unit.id);
  });
  trace.behaviour_from_policy = true;
  Seconds span{0};
  if (!trace.jobs.empty()) span = trace.jobs.back().submit;
  for (const DemandSeries& s : trace.series) span = std::max(span, s.points.back().t);
  trace.span = span;
  trace.stats.warnings.push_back(std::to_string(converted) + " GPU demand series became " + std::to_string(made) +
                                 " jobs (last in, first out over the level's steps; at most " +
                                 std::to_string(max_gpus) + " GPUs per job)");
  return trace;
}

}  // namespace gpuscaler::sim
