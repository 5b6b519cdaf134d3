#include "sim/baseline_fit.h"

#include <algorithm>

#include "sim/capacity_spread.h"

namespace gpuscaler::sim::baseline_detail {
namespace {

int UnitMilli(const DemandUnit& u, const GpuModel* gpu) {
  if (u.gpus > 0) return 1000;
  if (u.gpu_milli > 0) return u.gpu_milli;
  if (!u.mig_profile.empty() && gpu != nullptr) {
    const MigProfile* p = gpu->FindMigProfile(u.mig_profile);
    if (p != nullptr) return p->ShareMilli();
    return -1;
  }
  return u.mig_profile.empty() ? 0 : -1;
}

bool GpuMatches(const DemandUnit& u, const GpuModel* gpu) {
  if (!NeedsGpu(u)) return true;
  if (gpu == nullptr) return false;
  if (!u.gpu_models.empty() && !Contains(u.gpu_models, gpu->name) && !Contains(u.gpu_models, gpu->short_name)) {
    return false;
  }
  return u.min_gpu_memory_mib <= gpu->memory_mib;
}

}  // namespace

bool Admits(const Policy& policy, const DemandUnit& u, const std::string& pool, const Offering& o) {
  if (!u.interruptible && o.capacity_type == CapacityType::kSpot) return false;
  if (u.capacity_type && *u.capacity_type != o.capacity_type) return false;
  if (!u.pool.empty() && u.pool != pool) return false;
  if (!u.zones.empty() && !Contains(u.zones, o.zone)) return false;
  if (!u.instance_types.empty() && !Contains(u.instance_types, o.instance_type)) return false;
  if (const WorkloadClassPolicy* c = policy.FindClass(u.workload_class)) {
    if (!c->pools.empty() && !Contains(c->pools, pool)) return false;
    if (!c->interruptible && o.capacity_type == CapacityType::kSpot) return false;
    if (c->max_spot_share <= 0 && o.capacity_type == CapacityType::kSpot) return false;
  }
  return true;
}

bool PoolAllows(const NodePoolPolicy& p, const Offering& o, const InstanceType& t, const GpuModel* gpu) {
  if (!p.AllowsType(t, gpu)) return false;
  if (!p.regions.empty() && !Contains(p.regions, o.region)) return false;
  if (!p.zones.empty() && !Contains(p.zones, o.zone)) return false;
  if (o.capacity_type == CapacityType::kReserved) return true;  // the caller checks the reservation
  return std::find(p.capacity_types.begin(), p.capacity_types.end(), o.capacity_type) != p.capacity_types.end();
}

bool TryFit(const DemandUnit& u, Bin& b, bool commit) {
  if (!b.accepts) return false;
  if (!GpuMatches(u, b.gpu)) return false;
  if (u.cpu_milli > b.free_cpu || u.memory_mib > b.free_mem) return false;
  const int milli = UnitMilli(u, b.gpu);
  if (milli < 0) return false;
  std::vector<size_t> take;
  if (milli == 1000) {
    for (size_t g = 0; g < b.free_milli.size() && static_cast<int>(take.size()) < u.gpus; ++g) {
      if (b.free_milli[g] == 1000) take.push_back(g);
    }
    if (static_cast<int>(take.size()) < u.gpus) return false;
  } else if (milli > 0) {
    for (size_t g = 0; g < b.free_milli.size(); ++g) {
      if (b.free_milli[g] >= milli) {
        take.push_back(g);
        break;
      }
    }
    if (take.empty()) return false;
  }
  if (commit) {
    for (size_t g : take) b.free_milli[g] -= milli;
    b.free_cpu -= u.cpu_milli;
    b.free_mem -= u.memory_mib;
  }
  return true;
}

std::set<std::string> PoolsOfBlockedClasses(const Snapshot& s, const Policy& policy) {
  std::set<std::string> pools;
  for (const std::string& cls : s.scale_down_blocked_classes) {
    const WorkloadClassPolicy* c = policy.FindClass(cls);
    if (c == nullptr || c->pools.empty()) {
      for (const NodePoolPolicy& p : policy.pools) pools.insert(p.name);
    } else {
      pools.insert(c->pools.begin(), c->pools.end());
    }
  }
  return pools;
}

void FinishPlan(Plan& plan, const std::string& name) {
  plan.cost_after_usd_per_hour = plan.cost_before_usd_per_hour;
  for (const LaunchAction& l : plan.launches) plan.cost_after_usd_per_hour += l.usd_per_hour;
  for (const TerminationAction& t : plan.terminations) plan.cost_after_usd_per_hour -= t.offering.usd_per_hour;
  plan.summary = name + ": " + std::to_string(plan.launches.size()) + " launch groups, " +
                 std::to_string(plan.terminations.size()) + " terminations, " +
                 std::to_string(plan.unplaced.size()) + " unplaced";
}

FitIndex::FitIndex(const Snapshot& s) : s_(s) {
  for (const InstanceType& t : s.instance_types) types_[t.name] = &t;
}

const InstanceType* FitIndex::Type(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : it->second;
}

const GpuModel* FitIndex::GpuOf(const InstanceType* t) const {
  if (t == nullptr) return nullptr;
  for (const GpuModel& g : s_.gpu_models) {
    if (g.name == t->gpu_model) return &g;
  }
  return nullptr;
}

Bin FitIndex::EmptyBin(const std::string& pool, const Offering& o) const {
  Bin b;
  b.pool = pool;
  b.offering = &o;
  b.type = Type(o.instance_type);
  b.gpu = GpuOf(b.type);
  if (b.type != nullptr) {
    b.free_milli.assign(static_cast<size_t>(b.type->gpu_count), 1000);
    b.free_cpu = int64_t{b.type->vcpus} * 1000;
    b.free_mem = b.type->memory_mib;
  }
  return b;
}

std::vector<Candidate> FitIndex::Candidates(const Policy& policy, bool spot_allowed, bool reserved_allowed) const {
  std::vector<Candidate> all;
  for (const NodePoolPolicy& p : policy.pools) {
    for (const Offering& o : s_.offerings) {
      if (!o.available) continue;
      if (!spot_allowed && o.capacity_type == CapacityType::kSpot) continue;
      const InstanceType* t = Type(o.instance_type);
      if (t == nullptr) continue;
      const GpuModel* gpu = GpuOf(t);
      if (o.capacity_type == CapacityType::kReserved) {
        if (!reserved_allowed) continue;
        const auto r = std::find_if(s_.reservations.begin(), s_.reservations.end(),
                                    [&](const Reservation& x) { return x.id == o.reservation_id; });
        if (r == s_.reservations.end() || !p.SelectsReservation(*r) || !r->OpenAt(s_.time)) continue;
      }
      if (PoolAllows(p, o, *t, gpu)) all.push_back({p.name, &o, t, gpu});
    }
  }
  return all;
}

std::vector<Bin> FitIndex::ExistingBins() const {
  std::vector<Bin> bins;
  for (const Node& n : s_.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    Bin b = EmptyBin(n.pool, n.offering);
    b.node_id = n.id;
    b.accepts = n.AcceptsWork();
    for (const DemandUnit& u : n.running) TryFit(u, b, true);
    for (auto it = n.labels.lower_bound(kCapacitySpreadLabelPrefix);
         it != n.labels.end() && it->first.starts_with(kCapacitySpreadLabelPrefix); ++it) {
      b.spread_labels.insert(*it);
    }
    bins.push_back(std::move(b));
  }
  return bins;
}

}  // namespace gpuscaler::sim::baseline_detail
