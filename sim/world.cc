#include "sim/world.h"

#include <algorithm>

#include "sim/workload.h"

namespace gpuscaler::sim {

World::World(const Scenario& s, const Policy& policy, const std::string& id_prefix, size_t max_pending_units,
             bool long_running)
    : clock_(s.start) {
  SimCloudConfig cloud_config = s.cloud;
  cloud_config.id_prefix = id_prefix;
  if (long_running) ForLongRunning(cloud_config);
  cloud_ =
      std::make_unique<SimCloud>(clock_, s.catalog, s.catalog.Offerings(s.regions), s.market, cloud_config);
  // Deadlines are judged by the scenario's policy whatever the run's policy
  // defers (gpuscaler-reactive runs the same work at once).
  work_ = std::make_unique<Workload>(s.trace, s.catalog, policy, s.start, max_pending_units, &s.policy);
  if (!s.runtimes_known) work_->UseClassRuntimes(policy);
  cloud_->SetObserver(work_.get());
  end_ = s.start + s.horizon;
  tick_ = std::max(Seconds(1), policy.scaling.tick_interval);
  next_tick_ = s.start;
}

World::~World() = default;

WallTime World::next_time() const {
  WallTime t = next_tick_;
  if (auto c = cloud_->NextEventTime(); c && *c < t) t = *c;
  if (auto w = work_->NextEventTime(); w && *w < t) t = *w;
  return t;
}

bool World::RunUntilTick() {
  while (true) {
    const WallTime t = next_time();
    if (t >= end_) return false;
    clock_.AdvanceTo(t);
    cloud_->RunEventsUntil(t);
    work_->RunEventsUntil(t);
    work_->Schedule(t);
    if (t == next_tick_) {
      work_->SetSignalTime(t);
      return true;
    }
  }
}

void World::AfterTick() {
  work_->Schedule(now());
  next_tick_ += tick_;
}

void World::Close(WallTime end) {
  clock_.AdvanceTo(end);
  work_->CloseAccounting(end);
}

int64_t World::queued_jobs() const { return work_->queued(); }
int64_t World::running_jobs() const { return work_->running(); }

}  // namespace gpuscaler::sim
