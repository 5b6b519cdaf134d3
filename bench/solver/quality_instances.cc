// The solver_quality instances (quality_instances.h).
#include "solver/quality_instances.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace gpuscaler::bench {
namespace {

// Pool "p" of `families` (up to 1,000 nodes) and the classes "a" and "b".
void AddPoolAndClasses(Policy& policy, std::vector<std::string> families) {
  NodePoolPolicy pool;
  pool.name = "p";
  pool.families = std::move(families);
  pool.max_nodes = 1000;
  policy.pools.push_back(pool);
  for (const char* c : {"a", "b"}) {
    WorkloadClassPolicy w;
    w.name = c;
    policy.classes.push_back(w);
  }
}

// The second family's catalog: AWS-like types with L40S nodes beside L4,
// A10G and A100, in five zones.
struct CatalogType {
  const char* name;
  const char* gpu;
  int gpus;
  int64_t gpu_mem_mib;
  int vcpus;
  int mem_gib;
  double od;
};

constexpr CatalogType kPinCatalog[] = {
    {"g6.xlarge", "L4", 1, 23034, 4, 16, 0.805},          {"g6.12xlarge", "L4", 4, 23034, 48, 192, 4.602},
    {"g5.xlarge", "A10G", 1, 24576, 4, 16, 1.006},        {"g5.12xlarge", "A10G", 4, 24576, 48, 192, 5.672},
    {"g6e.xlarge", "L40S", 1, 46068, 4, 32, 1.861},       {"g6e.12xlarge", "L40S", 4, 46068, 48, 384, 10.493},
    {"g6e.48xlarge", "L40S", 8, 46068, 192, 1536, 30.131}, {"p4de.24xlarge", "A100", 8, 81920, 96, 1152, 40.966},
    {"m5.2xlarge", "", 0, 0, 8, 32, 0.384},
};
const char* const kPinZones[] = {"z-a", "z-b", "z-c", "z-d", "z-e"};

Instance PinnedBase() {
  Instance in;
  Snapshot& s = in.snap;
  s.time = FromUnixSeconds(1780000000);
  s.gpu_models = {{"A10G", "a10g", 24576, {}}, {"L4", "l4", 23034, {}}, {"L40S", "l40s", 46068, {}},
                  {"A100", "a100", 81920, {}}};
  for (const CatalogType& t : kPinCatalog) {
    InstanceType it;
    it.name = t.name;
    it.family = std::string(t.name).substr(0, std::string(t.name).find('.'));
    it.gpu_model = t.gpu;
    it.gpu_count = t.gpus;
    it.gpu_memory_mib = t.gpu_mem_mib;
    it.vcpus = t.vcpus;
    it.memory_mib = int64_t(t.mem_gib) * 1024;
    s.instance_types.push_back(it);
  }
  AddPoolAndClasses(in.policy, {"g5", "g6", "g6e", "p4de", "m5"});
  in.policy.scaling.max_nodes_added_per_tick = 1000;
  in.policy.disruption.consolidation = false;
  return in;
}

Offering PinOffering(const CatalogType& t, const char* zone, bool spot, double spot_fraction, double interruptions) {
  Offering o;
  o.instance_type = t.name;
  o.region = "r";
  o.zone = zone;
  o.on_demand_usd_per_hour = t.od;
  o.usd_per_hour = spot ? t.od * spot_fraction : t.od;
  o.capacity_type = spot ? CapacityType::kSpot : CapacityType::kOnDemand;
  o.interruptions_per_hour = spot ? interruptions : 0;
  return o;
}

// A ready node of `o` in pool p whose first `used_gpus` GPUs run 1-GPU work
// (2 vCPU, 8 GiB each) of class r.
Node ExistingNode(const Snapshot& s, const std::string& id, const Offering& o, int used_gpus) {
  Node n;
  n.id = id;
  n.instance_id = "i-" + id;
  n.pool = "p";
  n.offering = o;
  n.launch_time = s.time - Seconds(7200);
  n.state = NodeState::kReady;
  for (int k = 0; k < used_gpus; ++k) {
    DemandUnit u;
    u.id = id + "/r" + std::to_string(k);
    u.workload_class = "r";
    u.gpus = 1;
    u.cpu_milli = 2000;
    u.memory_mib = 8192;
    n.running.push_back(u);
  }
  return n;
}

// A pending unit's class and shape, drawn with `pick(n)` (uniform in
// [0, n)): whole GPUs (1, 2 or 4) or CPU-only, CPU, memory, whether it is
// interruptible, and its runtime, checkpoints and restart cost.
template <typename Pick>
DemandUnit RandomShape(Pick& pick) {
  DemandUnit u;
  u.workload_class = pick(2) ? "a" : "b";
  const int kind = pick(6);
  u.gpus = kind == 5 ? 0 : (kind < 3 ? 1 : kind == 3 ? 2 : 4);
  u.cpu_milli = 1000 * (1 + pick(u.gpus ? 12 : 4));
  u.memory_mib = 1024 * (2 + pick(u.gpus ? 48 : 12));
  u.interruptible = pick(3) != 0;
  u.expected_runtime = Seconds(1800 * (1 + pick(8)));
  u.checkpoint_interval = Seconds(pick(3) == 0 ? 0 : 600 * (1 + pick(4)));
  u.restart_cost = Seconds(120 + 60 * pick(10));
  return u;
}

void AddPending(Snapshot& s, int shape, int count, const DemandUnit& proto) {
  for (int i = 0; i < count; ++i) {
    DemandUnit x = proto;
    x.id = "s" + std::to_string(shape) + "-" + std::to_string(i);
    s.pending.push_back(x);
  }
}

// Adds copies of `proto` as shape `shape` of `shapes`: the last shape takes
// the `units_left`, the others a random share of them. Returns how many.
template <typename Pick>
int AddShapeUnits(Snapshot& s, int shape, int shapes, int units_left, const DemandUnit& proto, Pick& pick) {
  const int count = shape == shapes - 1 ? units_left : 1 + pick(std::max(1, units_left / 2));
  AddPending(s, shape, count, proto);
  return count;
}

// The offerings a scene may use: those still available.
void CollectUsable(const Snapshot& s, Instance* in) {
  for (size_t i = 0; i < s.offerings.size(); ++i)
    if (s.offerings[i].available) in->usable.push_back(int(i));
}

}  // namespace

Instance MakeInstance(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  std::uniform_real_distribution<double> u01(0, 1);
  Instance in;
  Snapshot& s = in.snap;
  s.time = FromUnixSeconds(1780000000);
  s.gpu_models = {{"A10G", "a10g", 24576, {}}, {"L4", "l4", 23034, {}}, {"A100", "a100", 81920, {}}};
  struct T {
    const char* name;
    const char* gpu;
    int gpus;
    int vcpus;
    int mem_gib;
    double od;
  };
  const T catalog[] = {
      {"g6.xlarge", "L4", 1, 4, 16, 0.805},       {"g6.4xlarge", "L4", 1, 16, 64, 1.32},
      {"g6.12xlarge", "L4", 4, 48, 192, 4.60},    {"g6.48xlarge", "L4", 8, 192, 768, 13.35},
      {"g5.xlarge", "A10G", 1, 4, 16, 1.006},     {"g5.12xlarge", "A10G", 4, 48, 192, 5.67},
      {"g5.48xlarge", "A10G", 8, 192, 768, 16.29}, {"p4de.24xlarge", "A100", 8, 96, 1152, 40.97},
      {"m5.2xlarge", "", 0, 8, 32, 0.384},
  };
  // 5 types x 3 zones x 2 capacity types = 30 offerings at most.
  std::vector<int> types;
  for (int i = 0; i < 9; ++i) types.push_back(i);
  std::shuffle(types.begin(), types.end(), rng);
  types.resize(5);
  std::sort(types.begin(), types.end());
  const char* zones[] = {"z-a", "z-b", "z-c"};
  for (int ti : types) {
    const T& t = catalog[ti];
    InstanceType it;
    it.name = t.name;
    it.family = std::string(t.name).substr(0, std::string(t.name).find('.'));
    it.gpu_model = t.gpu;
    it.gpu_count = t.gpus;
    it.gpu_memory_mib = t.gpus ? (std::string(t.gpu) == "A100" ? 81920 : 23034) : 0;
    it.vcpus = t.vcpus;
    it.memory_mib = int64_t(t.mem_gib) * 1024;
    s.instance_types.push_back(it);
    for (const char* z : zones) {
      Offering o;
      o.instance_type = t.name;
      o.region = "r";
      o.zone = z;
      o.on_demand_usd_per_hour = t.od;
      o.usd_per_hour = t.od;
      s.offerings.push_back(o);
      o.capacity_type = CapacityType::kSpot;
      o.usd_per_hour = t.od * (0.3 + 0.5 * u01(rng));
      o.interruptions_per_hour = 0.02 + 0.5 * u01(rng) * u01(rng);
      o.available = u01(rng) > 0.1;
      s.offerings.push_back(o);
    }
  }
  AddPoolAndClasses(in.policy, {"g5", "g6", "p4de", "m5"});
  if (pick(2) == 0) in.policy.classes[0].max_spot_share = 0.3 + 0.1 * pick(5);
  in.policy.scaling.max_nodes_added_per_tick = 1000;
  in.policy.disruption.consolidation = false;
  // 2-5 shapes, up to 60 units.
  const int shapes = 2 + pick(4);
  int units = 10 + pick(51);
  for (int k = 0; k < shapes && units > 0; ++k) {
    DemandUnit u = RandomShape(pick);
    if (pick(6) == 0 && u.gpus) u.gpu_models = {pick(2) ? "l4" : "a10g"};
    u.priority = pick(3);
    units -= AddShapeUnits(s, k, shapes, units, u, pick);
  }
  CollectUsable(s, &in);
  return in;
}

// The fixed case: the only L40S room in zone z-e is an on-demand
// g6e.48xlarge with 6 of its 8 GPUs free, and the only L40S offering still
// available in z-e is g6e.48xlarge. Six 1-GPU units must run on L40S in
// z-e; one 4-GPU unit may run anywhere. Filling the room with the 4-GPU unit
// first leaves four pinned units for a new g6e.48xlarge.
Instance FreeL40sRoomInZoneE() {
  Instance in = PinnedBase();
  Snapshot& s = in.snap;
  for (const CatalogType& t : kPinCatalog)
    for (const char* z : kPinZones) {
      Offering od = PinOffering(t, z, false, 1, 0);
      od.available = !(std::string(z) == "z-e" && std::string(t.gpu) == "L40S" && t.gpus < 8);
      s.offerings.push_back(od);
      Offering spot = PinOffering(t, z, true, 0.45, 0.05);
      spot.available = od.available && std::string(z) != "z-e";
      s.offerings.push_back(spot);
    }
  s.nodes.push_back(ExistingNode(s, "e-l40s", PinOffering(kPinCatalog[6], "z-e", false, 1, 0), 2));
  s.nodes.push_back(ExistingNode(s, "a-l4", PinOffering(kPinCatalog[1], "z-a", false, 1, 0), 3));
  DemandUnit pinned;
  pinned.workload_class = "a";
  pinned.gpus = 1;
  pinned.cpu_milli = 4000;
  pinned.memory_mib = 16384;
  pinned.interruptible = false;
  pinned.gpu_models = {"l40s"};
  pinned.zones = {"z-e"};
  AddPending(s, 0, 6, pinned);
  DemandUnit big;
  big.workload_class = "b";
  big.gpus = 4;
  big.cpu_milli = 16000;
  big.memory_mib = 65536;
  big.interruptible = false;
  AddPending(s, 1, 1, big);
  CollectUsable(s, &in);
  return in;
}

// Seeded: 5-7 of the 9 types in 5 zones, on-demand and spot (about 20 % of
// offerings unavailable), 2-6 existing ready nodes (a quarter of them spot)
// with some GPUs in use, and 8-40 pending units in 2-5 shapes. Pins lean
// towards the existing nodes' GPU models and zones, so that pinned and
// unpinned units compete for the same free room.
Instance MakeExistingInstance(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  std::uniform_real_distribution<double> u01(0, 1);
  Instance in = PinnedBase();
  Snapshot& s = in.snap;
  const int ntypes = int(std::size(kPinCatalog));
  std::vector<int> types(ntypes);
  for (int i = 0; i < ntypes; ++i) types[i] = i;
  std::shuffle(types.begin(), types.end(), rng);
  types.resize(5 + pick(3));
  std::sort(types.begin(), types.end());
  for (int ti : types)
    for (const char* z : kPinZones) {
      Offering od = PinOffering(kPinCatalog[ti], z, false, 1, 0);
      od.available = u01(rng) > 0.2;
      s.offerings.push_back(od);
      Offering spot = PinOffering(kPinCatalog[ti], z, true, 0.3 + 0.5 * u01(rng), 0.02 + 0.5 * u01(rng) * u01(rng));
      spot.available = u01(rng) > 0.2;
      s.offerings.push_back(spot);
    }
  if (pick(2) == 0) in.policy.classes[0].max_spot_share = 0.3 + 0.1 * pick(5);
  const int nodes = 2 + pick(5);
  std::vector<std::string> node_gpus, node_zones;
  for (int k = 0; k < nodes; ++k) {
    int ti = 0;
    do ti = types[size_t(pick(int(types.size())))];
    while (kPinCatalog[ti].gpus == 0 && types.size() > 1 && pick(4) != 0);
    const CatalogType& t = kPinCatalog[ti];
    const char* z = kPinZones[pick(5)];
    const bool spot = pick(4) == 0;
    const Offering o = PinOffering(t, z, spot, 0.3 + 0.5 * u01(rng), 0.02 + 0.3 * u01(rng));
    const int used = t.gpus > 0 ? pick(t.gpus) : 0;
    s.nodes.push_back(ExistingNode(s, "n" + std::to_string(k), o, used));
    if (t.gpus > 0) {
      for (const auto& m : s.gpu_models)
        if (m.name == t.gpu) node_gpus.push_back(m.short_name);
      node_zones.push_back(z);
    }
  }
  const char* const gpu_names[] = {"l4", "a10g", "l40s", "a100"};
  const int shapes = 2 + pick(4);
  int units = 8 + pick(33);
  for (int k = 0; k < shapes && units > 0; ++k) {
    DemandUnit u = RandomShape(pick);
    u.priority = pick(3);
    if (u.gpus > 0 && pick(3) == 0)
      u.gpu_models = {!node_gpus.empty() && pick(2) ? node_gpus[size_t(pick(int(node_gpus.size())))]
                                                    : std::string(gpu_names[pick(4)])};
    if (u.gpus > 0 && pick(4) == 0) u.min_gpu_memory_mib = 40000;
    if (pick(3) == 0) {
      u.zones = {!node_zones.empty() && pick(2) ? node_zones[size_t(pick(int(node_zones.size())))]
                                                : std::string(kPinZones[pick(5)])};
      if (pick(3) == 0) u.zones.push_back(kPinZones[pick(5)]);
    }
    units -= AddShapeUnits(s, k, shapes, units, u, pick);
  }
  CollectUsable(s, &in);
  return in;
}

const InstanceType& TypeOf(const Snapshot& s, const Offering& o) {
  for (const auto& t : s.instance_types)
    if (t.name == o.instance_type) return t;
  return s.instance_types[0];
}

bool Compatible(const Snapshot& s, const DemandUnit& u, const Offering& o) {
  const InstanceType& t = TypeOf(s, o);
  if (o.capacity_type == CapacityType::kSpot && !u.interruptible) return false;
  if (u.gpus > t.gpu_count) return false;
  if (!u.zones.empty() && std::find(u.zones.begin(), u.zones.end(), o.zone) == u.zones.end()) return false;
  if (u.gpus > 0 && u.min_gpu_memory_mib > t.gpu_memory_mib) return false;
  if (u.gpus > 0 && !u.gpu_models.empty()) {
    bool ok = false;
    for (const auto& m : s.gpu_models)
      if (m.name == t.gpu_model) ok = std::find(u.gpu_models.begin(), u.gpu_models.end(), m.short_name) != u.gpu_models.end();
    if (!ok) return false;
  }
  return u.cpu_milli <= int64_t(t.vcpus) * 1000 && u.memory_mib <= t.memory_mib;
}

bool Fits(const Snapshot& s, const std::vector<const DemandUnit*>& units, const Offering& o) {
  const InstanceType& t = TypeOf(s, o);
  int64_t cpu = 0, mem = 0;
  int gpus = 0;
  for (const auto* u : units) {
    if (!Compatible(s, *u, o)) return false;
    cpu += u->cpu_milli;
    mem += u->memory_mib;
    gpus += u->gpus;
  }
  return gpus <= t.gpu_count && cpu <= int64_t(t.vcpus) * 1000 && mem <= t.memory_mib;
}


Groups GroupUnits(const Snapshot& s) {
  Groups g;
  std::string last;
  for (const auto& u : s.pending) {
    const std::string key = u.id.substr(0, u.id.find('-'));
    if (key != last) {
      g.rep.push_back(&u);
      g.count.push_back(0);
      last = key;
    }
    g.count.back()++;
  }
  return g;
}

std::vector<FreeRoom> FreeRooms(const Snapshot& s) {
  std::vector<FreeRoom> rooms;
  for (const Node& n : s.nodes) {
    const InstanceType& t = TypeOf(s, n.offering);
    FreeRoom r{t.gpu_count, int64_t(t.vcpus) * 1000, t.memory_mib};
    for (const DemandUnit& u : n.running) {
      r.gpus -= u.gpus;
      r.cpu_milli -= u.cpu_milli;
      r.memory_mib -= u.memory_mib;
    }
    rooms.push_back(r);
  }
  return rooms;
}

}  // namespace gpuscaler::bench
