#include "gpuscaler/daemon/engine.h"

#include <algorithm>
#include <memory>

namespace gpuscaler::daemon {
namespace {

double NodeSpend(const Controller& c) {
  double rate = 0;
  for (const Node& n : c.snapshot().nodes) rate += n.offering.usd_per_hour;
  return rate;
}

class LiveEngine final : public Engine {
 public:
  explicit LiveEngine(LiveEngineParts parts)
      : parts_(std::move(parts)), signal_work_(*parts_.catalog), controller_(MakeController()) {}

  std::string mode() const override {
    if (!parts_.mode.empty()) return parts_.mode;
    return parts_.controller_options.dry_run ? "dry-run" : "live";
  }
  Seconds tick_interval() const override {
    return std::max(Seconds(1), controller_->policy().scaling.tick_interval);
  }
  double speed() const override { return parts_.speed; }
  const Controller& controller() const override { return *controller_; }
  const Catalog& catalog() const override { return *parts_.catalog; }
  WallTime now() const override { return parts_.clock->WallNow(); }

  EngineTick Tick() override {
    EngineTick out;
    if (parts_.watcher) {
      out.reload = parts_.watcher->Check();
      if (out.reload.kind == PolicyReload::Kind::kReloaded) controller_->SetPolicy(parts_.watcher->policy());
    }
    if (parts_.before_tick && !parts_.before_tick()) {
      out.finished = true;
      out.time = parts_.clock->WallNow();
      Describe(&out);
      return out;
    }
    const WallTime now = parts_.clock->WallNow();
    if (parts_.work == nullptr) ReadDemand(now, &out);
    out.report = controller_->Tick();
    if (!warmed_) {
      warmed_ = true;
      WarmForecasts(now, &out.report);
    }
    if (parts_.observe_tick) parts_.observe_tick(out.report);
    if (parts_.after_tick) parts_.after_tick();
    out.time = now;
    Describe(&out);
    return out;
  }

  EngineTick Standby() override {
    EngineTick out;
    if (parts_.watcher) {
      out.reload = parts_.watcher->Check();
      if (out.reload.kind == PolicyReload::Kind::kReloaded) controller_->SetPolicy(parts_.watcher->policy());
    }
    const WallTime now = parts_.clock->WallNow();
    if (parts_.work == nullptr) ReadDemand(now, &out);
    out.time = now;
    out.standby = true;
    Describe(&out);
    return out;
  }

  void Resign() override {
    controller_ = MakeController();
    warmed_ = false;
  }

  Status Shutdown() override {
    if (shut_down_) return Status();
    shut_down_ = true;
    // The daemon's store commits every tick, so the usage accumulated since
    // the last interval is all that is left.
    Status flushed = controller_->FlushUsage();
    if (parts_.shutdown) {
      Status s = parts_.shutdown();
      if (flushed.ok()) flushed = std::move(s);
    }
    return flushed;
  }

 private:
  // A controller as a restart makes it: its first Tick restores what the
  // store holds (month-to-date, open intents, drains, learned risk).
  std::unique_ptr<Controller> MakeController() {
    auto c = std::make_unique<Controller>(
        *parts_.clock, *parts_.cloud, parts_.store,
        parts_.work != nullptr ? *parts_.work : static_cast<WorkSource&>(signal_work_), *parts_.catalog,
        parts_.watcher ? parts_.watcher->policy() : parts_.fixed_policy.value_or(Policy{}), parts_.controller_options,
        parts_.planner);
    if (parts_.cluster_nodes != nullptr) c->SetClusterNodes(parts_.cluster_nodes);
    return c;
  }

  // Signals and the Kubernetes view into the signal work source: demand as
  // the next tick's plan will see it.
  void ReadDemand(WallTime now, EngineTick* out) {
    out->signals = parts_.read_signals(controller_->policy(), now);
    // Busy GPU time of the usage rows: DCGM's per-host utilisation.
    for (const Node& n : controller_->snapshot().nodes) {
      controller_->SetNodeUtilization(n.instance_id, MeasuredUtilization(out->signals, n));
    }
    if (parts_.read_cluster) {
      const ClusterWork cluster = parts_.read_cluster(controller_->policy(), now);
      signal_work_.Update(controller_->policy(), out->signals, controller_->snapshot().nodes, now, &cluster);
    } else {
      signal_work_.Update(controller_->policy(), out->signals, controller_->snapshot().nodes, now);
    }
    out->queue_depth = signal_work_.queue_depths();
  }

  void WarmForecasts(WallTime now, TickReport* report) {
    const Policy& policy = controller_->policy();
    for (const WorkloadClassPolicy& c : policy.classes) {
      if (!c.forecast || !parts_.read_history) continue;
      const std::string head = "class " + c.name + ": forecast history ";
      if (!c.queue_depth || c.queue_depth->source != SignalSource::kPrometheus) {
        report->forecast_notes.push_back(
            head +
            "not warmed (its queue depth is not a Prometheus signal): it builds up "
            "from now");
        continue;
      }
      const Seconds history = controller_->forecaster().options().history;
      Result<std::vector<std::pair<WallTime, double>>> points =
          parts_.read_history(*c.queue_depth, now - history, now - Seconds(60), Seconds(60));
      if (!points) {
        report->forecast_notes.push_back(head + "not warmed (" + points.error().ToString() +
                                         "): it builds up from now");
        continue;
      }
      if (points->empty()) {
        report->forecast_notes.push_back(
            head + "not warmed (its queue depth has no history): it builds up from now");
        continue;
      }
      double demand_now = 0;
      for (const DemandForecast& f : controller_->snapshot().forecasts) {
        if (f.workload_class == c.name) demand_now = f.demand_gpus;
      }
      const double per_unit = GpuShare(c.Unit());
      const auto gpus = [&](double depth) { return UnitsForQueueDepth(c, depth) * per_unit; };
      // The history ends where the live demand starts.
      const double offset = demand_now - gpus(points->back().second);
      int recorded = 0;
      for (const auto& [t, depth] : *points) {
        if (t >= now) continue;
        controller_->forecaster().Record(c.name, t, std::max(0.0, gpus(depth) + offset));
        ++recorded;
      }
      report->forecast_notes.push_back(head + "warmed from " + std::to_string(recorded) +
                                       " minutes of its queue depth (Prometheus query_range since " +
                                       FormatRfc3339(points->front().first) + ")");
    }
  }

  void Describe(EngineTick* out) const {
    out->cost_usd_per_hour = parts_.spend_rate ? parts_.spend_rate() : NodeSpend(*controller_);
    if (parts_.describe) parts_.describe(out);
  }

  LiveEngineParts parts_;
  SignalWorkSource signal_work_;
  std::unique_ptr<Controller> controller_;
  bool shut_down_ = false;
  bool warmed_ = false;  // the forecasts' histories were warmed (after the first tick)
};

}  // namespace

std::unique_ptr<Engine> MakeLiveEngine(LiveEngineParts parts) {
  return std::make_unique<LiveEngine>(std::move(parts));
}

}  // namespace gpuscaler::daemon
