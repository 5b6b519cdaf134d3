#include "gpuscaler/daemon/engine.h"

#include <algorithm>

#include "gpuscaler/solver/planner.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::daemon {
namespace {

double NodeSpend(const Controller& c) {
  double rate = 0;
  for (const Node& n : c.snapshot().nodes) rate += n.offering.usd_per_hour;
  return rate;
}

class DemoEngine final : public Engine {
 public:
  DemoEngine(std::unique_ptr<sim::Scenario> scenario, std::unique_ptr<SqliteAuditStore> store, double speed)
      : scenario_(std::move(scenario)), store_(std::move(store)), speed_(speed) {
    // The demo never asks for per-instance bills or old prices.
    sim::ForLongRunning(scenario_->cloud);
    sim::RunSpec spec;
    spec.name = "gpuscaler";
    spec.policy = scenario_->policy;
    sim::RunOptions options;
    options.store = store_.get();
    replay_ = std::make_unique<sim::Replay>(*scenario_, std::move(spec), options);
  }

  std::string mode() const override { return "demo"; }
  Seconds tick_interval() const override { return std::max(Seconds(1), scenario_->policy.scaling.tick_interval); }
  double speed() const override { return speed_; }
  const Controller& controller() const override { return replay_->controller(); }
  const Catalog& catalog() const override { return scenario_->catalog; }
  WallTime now() const override { return replay_->now(); }

  EngineTick Tick() override {
    EngineTick out;
    while (!replay_->done()) {
      if (replay_->Step(&out.report)) break;
    }
    out.finished = replay_->done();
    out.time = replay_->now();
    out.cost_usd_per_hour = replay_->cloud().CurrentUsdPerHour();
    out.queued_jobs = replay_->queued_jobs();
    out.running_jobs = replay_->running_jobs();
    return out;
  }

  Status Shutdown() override {
    if (shut_down_) return Status();
    shut_down_ = true;
    replay_->Finish();
    if (store_) return store_->Flush();
    return Status();
  }

 private:
  std::unique_ptr<sim::Scenario> scenario_;
  std::unique_ptr<SqliteAuditStore> store_;
  std::unique_ptr<sim::Replay> replay_;
  double speed_;
  bool shut_down_ = false;
};

class LiveEngine final : public Engine {
 public:
  explicit LiveEngine(LiveEngineParts parts)
      : parts_(std::move(parts)),
        work_(*parts_.catalog),
        controller_(*parts_.clock, *parts_.cloud, parts_.store, work_, *parts_.catalog, parts_.watcher->policy(),
                    parts_.controller_options,
                    PlannerFn([](const Snapshot& s, const Policy& p) { return MakePlan(s, p); })) {}

  std::string mode() const override { return parts_.controller_options.dry_run ? "dry-run" : "live"; }
  Seconds tick_interval() const override {
    return std::max(Seconds(1), controller_.policy().scaling.tick_interval);
  }
  const Controller& controller() const override { return controller_; }
  const Catalog& catalog() const override { return *parts_.catalog; }
  WallTime now() const override { return parts_.clock->WallNow(); }

  EngineTick Tick() override {
    EngineTick out;
    out.reload = parts_.watcher->Check();
    if (out.reload.kind == PolicyReload::Kind::kReloaded) controller_.SetPolicy(parts_.watcher->policy());
    const WallTime now = parts_.clock->WallNow();
    if (parts_.before_tick) parts_.before_tick(now);
    out.signals = parts_.read_signals(controller_.policy(), now);
    if (parts_.read_cluster) {
      const ClusterWork cluster = parts_.read_cluster(controller_.policy(), now);
      work_.Update(controller_.policy(), out.signals, controller_.snapshot().nodes, now, &cluster);
    } else {
      work_.Update(controller_.policy(), out.signals, controller_.snapshot().nodes, now);
    }
    out.report = controller_.Tick();
    out.time = now;
    out.queue_depth = work_.queue_depths();
    out.cost_usd_per_hour = parts_.spend_rate ? parts_.spend_rate() : NodeSpend(controller_);
    return out;
  }

  Status Shutdown() override {
    if (shut_down_) return Status();
    shut_down_ = true;
    // The daemon's store commits every tick (group_commit_ticks 1), so the
    // usage accumulated since the last interval is all that is left.
    return controller_.FlushUsage();
  }

 private:
  LiveEngineParts parts_;
  SignalWorkSource work_;
  Controller controller_;
  bool shut_down_ = false;
};

}  // namespace

Result<std::unique_ptr<Engine>> MakeDemoEngine(const DemoOptions& options) {
  std::string catalog_source;
  Catalog catalog = sim::DefaultCatalog(options.source_dir, &catalog_source);
  Result<sim::Scenario> scenario = sim::MakeBuiltinScenario("demo", options.seed, options.days, catalog);
  if (!scenario) return scenario.error();
  std::unique_ptr<SqliteAuditStore> store;
  Result<std::unique_ptr<SqliteAuditStore>> opened =
      SqliteAuditStore::Open(options.db_file.empty() ? ":memory:" : options.db_file);
  if (!opened) return opened.error().WithContext("audit database " + options.db_file);
  store = std::move(opened).value();
  return std::unique_ptr<Engine>(std::make_unique<DemoEngine>(
      std::make_unique<sim::Scenario>(std::move(scenario).value()), std::move(store), options.speed));
}

std::unique_ptr<Engine> MakeLiveEngine(LiveEngineParts parts) {
  return std::make_unique<LiveEngine>(std::move(parts));
}

}  // namespace gpuscaler::daemon
