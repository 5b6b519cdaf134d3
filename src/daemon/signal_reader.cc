#include "signal_reader.h"

#include <memory>
#include <mutex>

#include "gpuscaler/signals/collector.h"

namespace gpuscaler::daemon {
namespace {

signals::SignalEndpoints Endpoints(const SignalSettings& s) {
  signals::SignalEndpoints e;
  e.timeout = s.timeout;
  e.prometheus = s.prometheus;
  e.rabbitmq = s.rabbitmq;
  e.dcgm = s.dcgm;
  return e;
}

// The collector and the clock that stamps its readings, shared by copies of
// the reader (a std::function).
struct Shared {
  SystemClock clock;
  std::unique_ptr<signals::SignalCollector> collector;
};

}  // namespace

Result<SignalReader> MakeSignalReader(const SignalSettings& settings) {
  auto shared = std::make_shared<Shared>();
  shared->collector = std::make_unique<signals::SignalCollector>(Endpoints(settings), shared->clock);
  // Unreadable credentials at start are a configuration error; later (a
  // rotated secret gone missing) they make the signals missing: fail static.
  if (Status s = shared->collector->CredentialsStatus(); !s.ok()) return s.error();
  return SignalReader([shared](const Policy& policy, WallTime now) {
    std::vector<SignalQuery> queries;
    std::vector<ClassSignal> out;
    for (const WorkloadClassPolicy& c : policy.classes) {
      for (auto [query, kind] : {std::pair{&c.queue_depth, ClassSignal::Kind::kQueueDepth},
                                 std::pair{&c.gpu_utilization, ClassSignal::Kind::kGpuUtilization}}) {
        if (!query->has_value()) continue;
        queries.push_back(**query);
        ClassSignal s;
        s.workload_class = c.name;
        s.kind = kind;
        out.push_back(std::move(s));
      }
    }
    if (queries.empty()) return out;
    std::vector<signals::CollectedSignal> collected = shared->collector->Collect(queries);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].reading = signals::JudgeFreshness(std::move(collected[i].total), policy.signals, now);
      out[i].by_host = std::move(collected[i].by_host);
    }
    return out;
  });
}

Result<HistoryReader> MakeHistoryReader(const SignalSettings& settings) {
  auto shared = std::make_shared<Shared>();
  shared->collector = std::make_unique<signals::SignalCollector>(Endpoints(settings), shared->clock);
  if (Status s = shared->collector->CredentialsStatus(); !s.ok()) return s.error();
  return HistoryReader([shared](const SignalQuery& query, WallTime start, WallTime end,
                                Seconds step) -> Result<std::vector<std::pair<WallTime, double>>> {
    if (query.source != SignalSource::kPrometheus) {
      return Error::NotFound(std::string(ToString(query.source)) + " keeps no history to read (only prometheus does)");
    }
    Result<std::vector<signals::PromPoint>> points =
        shared->collector->QueryRange(query.query, start, end, step);
    if (!points) return points.error();
    std::vector<std::pair<WallTime, double>> out;
    out.reserve(points->size());
    for (const signals::PromPoint& p : *points) {
      out.emplace_back(FromUnixSeconds(static_cast<int64_t>(p.timestamp_s)), p.value);
    }
    return out;
  });
}

}  // namespace gpuscaler::daemon
