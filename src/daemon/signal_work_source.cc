#include "gpuscaler/daemon/signal_work_source.h"

#include <algorithm>
#include <cmath>

namespace gpuscaler::daemon {
namespace {

// What is left of a node while units are assigned to it.
struct Room {
  const Node* node = nullptr;
  int gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<DemandUnit> units;
};

bool Fits(const Room& r, const DemandUnit& u) {
  return r.gpus >= WholeGpusTaken(u) && r.cpu_milli >= u.cpu_milli && r.memory_mib >= u.memory_mib;
}

void Take(Room& r, DemandUnit u) {
  r.gpus -= WholeGpusTaken(u);
  r.cpu_milli -= u.cpu_milli;
  r.memory_mib -= u.memory_mib;
  r.units.push_back(std::move(u));
}

bool Serves(const WorkloadClassPolicy& cls, const Node& n) {
  if (!n.AcceptsWork()) return false;
  return cls.pools.empty() || std::find(cls.pools.begin(), cls.pools.end(), n.pool) != cls.pools.end();
}

// Whether the per-host utilisation series says the node is busy for the class.
bool Busy(const WorkloadClassPolicy& cls, const ClassSignal& util, const Node& n) {
  const double* u = HostUtilization(util, n);
  return u != nullptr && *u >= cls.scale_in_utilization_below;
}

std::string Signature(const std::vector<DemandUnit>& units) {
  std::string s;
  for (const DemandUnit& u : units) s += u.id + ";";
  return s;
}

}  // namespace

const double* HostUtilization(const ClassSignal& util, const Node& node) {
  if (util.kind != ClassSignal::Kind::kGpuUtilization || !util.reading.ok()) return nullptr;
  std::vector<std::string> keys = {node.id, node.instance_id};
  if (auto h = node.labels.find("kubernetes.io/hostname"); h != node.labels.end()) keys.push_back(h->second);
  for (const std::string& k : keys) {
    if (k.empty()) continue;
    auto it = util.by_host.find(k);
    if (it != util.by_host.end()) return &it->second;
  }
  return nullptr;
}

std::optional<double> MeasuredUtilization(const std::vector<ClassSignal>& signals, const Node& node) {
  double sum = 0;
  int n = 0;
  for (const ClassSignal& s : signals) {
    if (const double* u = HostUtilization(s, node)) {
      sum += *u;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

DemandUnit UnitForClass(const WorkloadClassPolicy& cls, std::string id) {
  DemandUnit u = cls.Unit();
  u.id = std::move(id);
  return u;
}

int UnitsForQueueDepth(const WorkloadClassPolicy& cls, double queue_depth) {
  if (!(queue_depth > 0)) return 0;
  double jobs = queue_depth;
  if (cls.jobs_per_gpu_per_minute && *cls.jobs_per_gpu_per_minute > 0 && cls.max_queue_wait &&
      cls.max_queue_wait->count() > 0) {
    const double minutes = static_cast<double>(cls.max_queue_wait->count()) / 60.0;
    const double gpus = std::ceil(queue_depth / (*cls.jobs_per_gpu_per_minute * minutes) - 1e-9);
    const int per_job = std::max(1, cls.gpus_per_job);
    jobs = std::ceil(gpus / per_job - 1e-9);
  }
  // A backlog of millions must not become millions of units: the planner's
  // input is capped by the controller anyway (max_pending_units).
  return static_cast<int>(std::min(jobs, 100000.0));
}

void SignalWorkSource::Update(const Policy& policy, const std::vector<ClassSignal>& signals,
                              const std::vector<Node>& nodes, WallTime now, const ClusterWork* cluster) {
  (void)now;
  statuses_.clear();
  if (cluster != nullptr) statuses_.push_back(cluster->status);
  std::map<std::string, const ClassSignal*> depth_of, util_of;
  for (const ClassSignal& s : signals) {
    (s.kind == ClassSignal::Kind::kQueueDepth ? depth_of : util_of)[s.workload_class] = &s;
    SignalStatus st;
    st.name = s.workload_class + (s.kind == ClassSignal::Kind::kQueueDepth ? " queue depth" : " gpu utilization");
    st.source = s.reading.source;
    st.classes = {s.workload_class};
    // The controller judges age against the policy; a stale reading keeps
    // its (old) observation time, a missing one has none.
    if (s.reading.value) st.sampled_at = s.reading.observed_at;
    st.value = s.reading.value.value_or(0);
    statuses_.push_back(std::move(st));
  }

  // Classes in priority order (then name), so the important ones get the
  // existing capacity first.
  std::vector<const WorkloadClassPolicy*> classes;
  for (const WorkloadClassPolicy& c : policy.classes) classes.push_back(&c);
  std::stable_sort(classes.begin(), classes.end(), [](const auto* a, const auto* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->name < b->name;
  });

  std::vector<const Node*> order;
  for (const Node& n : nodes) order.push_back(&n);
  std::stable_sort(order.begin(), order.end(), [](const Node* a, const Node* b) {
    return a->launch_time != b->launch_time ? a->launch_time < b->launch_time : a->id < b->id;
  });
  std::vector<Room> rooms;
  for (const Node* n : order) {
    Room r;
    r.node = n;
    if (const InstanceType* t = catalog_.FindInstanceType(n->offering.instance_type)) {
      r.gpus = t->gpu_count;
      r.cpu_milli = int64_t{t->vcpus} * 1000;
      r.memory_mib = t->memory_mib;
    }
    // Pods bound to the node hold their room before queue-derived units.
    if (cluster != nullptr) {
      auto bound = cluster->running.find(n->instance_id.empty() ? n->id : n->instance_id);
      if (bound != cluster->running.end()) {
        for (const DemandUnit& u : bound->second) Take(r, u);
      }
    }
    rooms.push_back(std::move(r));
  }

  std::vector<DemandUnit> pending;
  if (cluster != nullptr) pending = cluster->pending;
  desired_.clear();
  for (const WorkloadClassPolicy* cls : classes) {
    auto d = depth_of.find(cls->name);
    if (d == depth_of.end()) continue;  // no queue signal: demand comes from elsewhere (pods)
    if (std::optional<double> v = d->second->reading.UsableValue()) last_depth_[cls->name] = *v;
    auto held = last_depth_.find(cls->name);
    const int want = held == last_depth_.end() ? 0 : UnitsForQueueDepth(*cls, held->second);
    int made = 0;
    auto next_unit = [&] { return UnitForClass(*cls, cls->name + "/" + std::to_string(made++)); };

    // Busy nodes keep one unit each, whatever the queue says.
    auto u = util_of.find(cls->name);
    if (u != util_of.end()) {
      for (Room& r : rooms) {
        if (!Serves(*cls, *r.node) || !Busy(*cls, *u->second, *r.node)) continue;
        DemandUnit unit = next_unit();
        if (Fits(r, unit)) Take(r, std::move(unit));
        else --made;
      }
    }
    for (Room& r : rooms) {
      if (made >= want) break;
      if (!Serves(*cls, *r.node)) continue;
      while (made < want) {
        DemandUnit unit = next_unit();
        if (!Fits(r, unit)) {
          --made;
          break;
        }
        Take(r, std::move(unit));
      }
    }
    while (made < want) pending.push_back(next_unit());
    desired_[cls->name] = std::max(made, want);
  }

  std::unordered_map<std::string, Assigned> running;
  for (Room& r : rooms) {
    const std::string& key = r.node->instance_id.empty() ? r.node->id : r.node->instance_id;
    Assigned a;
    a.signature = Signature(r.units);
    auto old = running_.find(key);
    a.version = (old != running_.end() && old->second.signature == a.signature) ? old->second.version
                                                                                : ++version_counter_;
    a.units = std::move(r.units);
    running.emplace(key, std::move(a));
  }
  running_ = std::move(running);

  std::string sig = Signature(pending);
  if (sig != pending_signature_) {
    pending_signature_ = std::move(sig);
    ++pending_version_;
  }
  pending_ = std::move(pending);
}

const std::vector<DemandUnit>& SignalWorkSource::RunningOn(const std::string& instance_id) {
  static const std::vector<DemandUnit> kNone;
  auto it = running_.find(instance_id);
  return it == running_.end() ? kNone : it->second.units;
}

uint64_t SignalWorkSource::RunningVersion(const std::string& instance_id) const {
  auto it = running_.find(instance_id);
  return it == running_.end() ? 0 : it->second.version;
}

int SignalWorkSource::DesiredUnits(const std::string& workload_class) const {
  auto it = desired_.find(workload_class);
  return it == desired_.end() ? 0 : it->second;
}

}  // namespace gpuscaler::daemon
