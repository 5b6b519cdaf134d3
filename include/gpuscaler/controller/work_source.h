// The WorkSource seam: what waits for GPUs and what runs where, plus the
// state of the signals the demand came from. The daemon's comes from queues,
// metrics and Kubernetes (SignalWorkSource); the simulator's is its workload
// model (sim::Workload).
//
// Versions let the controller copy only what changed between ticks: a version
// must change whenever the content it covers does (equal versions promise
// equal content). Not thread-safe: called from the controller's Tick only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// One signal a class's demand depends on.
struct SignalStatus {
  std::string name;                    // "render queue depth"
  std::string source;                  // key of Policy::signals.max_staleness: "prometheus", "rabbitmq", …
  std::vector<std::string> classes;    // workload classes that depend on it
  std::optional<WallTime> sampled_at;  // unset: missing
  double value = 0;
};

// GPU-seconds the work on each node held over an interval, measured from
// when each unit started and stopped running there: by instance id, then by
// (workload class, the unit's own team; empty: none).
using HeldGpuSeconds = std::map<std::string, std::map<std::pair<std::string, std::string>, double>>;

// Work lost to one interruption, as the work source measured it: the node,
// when it was reclaimed, and the GPU-seconds of work each (workload class,
// the unit's own team; empty: none) had done since its last checkpoint.
// Empty `gpu_seconds`: the node lost nothing.
struct LostWork {
  std::string instance_id;
  WallTime time{};
  std::map<std::pair<std::string, std::string>, double> gpu_seconds;
};

class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // Work waiting for capacity, in scheduling order (the first comes first).
  virtual const std::vector<DemandUnit>& Pending() = 0;
  virtual uint64_t PendingVersion() const = 0;
  // Work bound to the instance; empty for an instance it does not know.
  virtual const std::vector<DemandUnit>& RunningOn(const std::string& instance_id) = 0;
  virtual uint64_t RunningVersion(const std::string& instance_id) const = 0;
  // The signals behind the demand, fresh or not.
  virtual std::vector<SignalStatus> Signals() const = 0;
  // The GPU-seconds held on each node since the previous call, up to `now`,
  // when the source knows exactly when each unit ran (the simulator); the
  // controller's usage rows then carry them as allocated and busy time. The
  // first call starts the measurement and returns nothing (so a source that
  // is never asked measures nothing): the controller calls it from its first
  // tick on when it records usage. nullopt (the default): not known, the
  // controller samples RunningOn at its ticks and busy time comes from
  // utilisation (UsageMeter::SetUtilization).
  virtual std::optional<HeldGpuSeconds> TakeHeldGpuSeconds(WallTime /*now*/) { return std::nullopt; }
  // The interruptions since the previous call and the work each lost, when
  // the source knows what its units had saved (the simulator); the
  // controller records them (AuditStore::RecordLostWork). As with
  // TakeHeldGpuSeconds, the first call starts the measurement and returns
  // none. nullopt (the default): not known; nothing is recorded, and reports
  // estimate the loss (docs/reports.md).
  virtual std::optional<std::vector<LostWork>> TakeLostWork() { return std::nullopt; }
};

}  // namespace gpuscaler
