// Hand-built snapshots for the planner tests: a small AWS-like catalog (made-up
// but realistic prices), unit and node builders, and a default policy.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::testing {

inline GpuModel A100() {
  GpuModel m;
  m.name = "NVIDIA-A100-SXM4-80GB";
  m.short_name = "a100-80gb";
  m.memory_mib = 81920;
  m.mig_profiles = {
      {"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}}, {"1g.20gb", 1, 2, 19968, {0, 2, 4, 6}},
      {"2g.20gb", 2, 2, 19968, {0, 2, 4}},          {"3g.40gb", 3, 4, 40192, {0, 4}},
      {"4g.40gb", 4, 4, 40192, {0}},                {"7g.80gb", 7, 8, 80896, {0}},
  };
  return m;
}

inline GpuModel A10G() { return {"NVIDIA-A10G", "a10g", 24576, {}}; }
inline GpuModel L4() { return {"NVIDIA-L4", "l4", 23034, {}}; }

inline InstanceType Type(std::string name, std::string family, std::string gpu, int gpus, int64_t gpu_mem, int vcpus,
                         int64_t mem_gib) {
  InstanceType t;
  t.name = std::move(name);
  t.family = std::move(family);
  t.gpu_model = std::move(gpu);
  t.gpu_count = gpus;
  t.gpu_memory_mib = gpu_mem;
  t.vcpus = vcpus;
  t.memory_mib = mem_gib * 1024;
  return t;
}

struct PricedType {
  InstanceType type;
  double on_demand;
};

inline std::vector<PricedType> Catalog() {
  return {
      {Type("g5.xlarge", "g5", "NVIDIA-A10G", 1, 24576, 4, 16), 1.006},
      {Type("g5.12xlarge", "g5", "NVIDIA-A10G", 4, 24576, 48, 192), 5.672},
      {Type("g5.48xlarge", "g5", "NVIDIA-A10G", 8, 24576, 192, 768), 16.288},
      {Type("g6.xlarge", "g6", "NVIDIA-L4", 1, 23034, 4, 16), 0.805},
      {Type("g6.12xlarge", "g6", "NVIDIA-L4", 4, 23034, 48, 192), 4.602},
      {Type("p4de.24xlarge", "p4de", "NVIDIA-A100-SXM4-80GB", 8, 81920, 96, 1152), 40.966},
      {Type("m5.xlarge", "m5", "", 0, 0, 4, 16), 0.192},
  };
}

inline Offering MakeOffering(const std::string& type, const std::string& zone, CapacityType cap, double od,
                             double spot_fraction = 0.4, double interruptions = 0.05) {
  Offering o;
  o.instance_type = type;
  o.region = "us-east-1";
  o.zone = zone;
  o.capacity_type = cap;
  o.on_demand_usd_per_hour = od;
  o.usd_per_hour = cap == CapacityType::kSpot ? od * spot_fraction : od;
  o.interruptions_per_hour = cap == CapacityType::kSpot ? interruptions : 0;
  return o;
}

// Catalog types in `zones` (us-east-1a/b by default), on-demand and spot
// (40 % of on-demand, 0.05 interruptions per hour).
inline Snapshot BaseSnapshot(const std::vector<std::string>& zones = {"us-east-1a", "us-east-1b"}) {
  Snapshot s;
  s.time = FromUnixSeconds(1780000000);
  s.gpu_models = {A100(), A10G(), L4()};
  for (const auto& pt : Catalog()) {
    s.instance_types.push_back(pt.type);
    for (const std::string& z : zones) {
      s.offerings.push_back(MakeOffering(pt.type.name, z, CapacityType::kOnDemand, pt.on_demand));
      s.offerings.push_back(MakeOffering(pt.type.name, z, CapacityType::kSpot, pt.on_demand));
    }
  }
  return s;
}

inline DemandUnit Unit(std::string id, int gpus, int64_t cpu_milli = 2000, int64_t mem_mib = 8192,
                       std::string cls = "inference") {
  DemandUnit u;
  u.id = std::move(id);
  u.workload_class = std::move(cls);
  u.gpus = gpus;
  u.cpu_milli = cpu_milli;
  u.memory_mib = mem_mib;
  return u;
}

inline std::vector<DemandUnit> Units(const std::string& prefix, int n, const DemandUnit& proto) {
  std::vector<DemandUnit> v;
  for (int i = 0; i < n; ++i) {
    DemandUnit u = proto;
    u.id = prefix + std::to_string(i);
    v.push_back(u);
  }
  return v;
}

inline const Offering& FindOffering(const Snapshot& s, const std::string& type, const std::string& zone,
                                    CapacityType cap) {
  for (const auto& o : s.offerings)
    if (o.instance_type == type && o.zone == zone && o.capacity_type == cap) return o;
  static Offering none;
  return none;
}

inline Node MakeNode(const Snapshot& s, std::string id, const std::string& type, const std::string& zone, CapacityType cap,
                     std::vector<DemandUnit> running = {}, std::string pool = "gpu") {
  Node n;
  n.id = id;
  n.instance_id = "i-" + id;
  n.pool = std::move(pool);
  n.offering = FindOffering(s, type, zone, cap);
  n.launch_time = s.time - Seconds(7200);
  n.state = NodeState::kReady;
  n.running = std::move(running);
  return n;
}

// A reservation `id` of `total` nodes of `type` in `zone` with `free` slots,
// open since an hour before the snapshot, added to `s` with its reserved
// offering (priced from the type's on-demand offering there).
inline Reservation AddReservation(Snapshot& s, const std::string& id, const std::string& type, const std::string& zone,
                                  int total, int free, std::map<std::string, std::string> tags = {}) {
  Reservation r;
  r.id = id;
  r.instance_type = type;
  r.region = "us-east-1";
  r.zone = zone;
  r.total_count = total;
  r.available_count = free;
  r.start = s.time - Seconds(3600);
  r.tags = std::move(tags);
  const Offering od = FindOffering(s, type, zone, CapacityType::kOnDemand);
  s.reservations.push_back(r);
  s.offerings.push_back(ReservedOffering(r, &od));
  return r;
}

// A copy of `u` that must run on on-demand capacity.
inline DemandUnit OnDemandOnly(DemandUnit u) {
  u.interruptible = false;
  return u;
}

// Nodes the plan launches of instance type `type`.
inline int LaunchesOf(const Plan& plan, const std::string& type) {
  int n = 0;
  for (const auto& l : plan.launches)
    if (l.offering.instance_type == type) n += l.count;
  return n;
}

// Whether a note of the plan contains `part`.
inline bool HasNote(const Plan& p, const std::string& part) {
  for (const auto& n : p.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// Nodes the plan launches, all launches together.
inline int LaunchedNodes(const Plan& p) {
  int n = 0;
  for (const auto& l : p.launches) n += l.count;
  return n;
}

// One pool "gpu" allowing everything, classes "inference" and "training".
inline Policy BasePolicy() {
  Policy p;
  NodePoolPolicy pool;
  pool.name = "gpu";
  pool.max_nodes = 1000;
  p.pools.push_back(pool);
  WorkloadClassPolicy inference;
  inference.name = "inference";
  p.classes.push_back(inference);
  WorkloadClassPolicy training;
  training.name = "training";
  p.classes.push_back(training);
  p.scaling.max_nodes_added_per_tick = 1000;
  p.scaling.max_nodes_removed_per_tick = 100;
  p.disruption.max_disrupted_per_interval = 100;
  return p;
}

}  // namespace gpuscaler::testing
