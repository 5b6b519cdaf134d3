// Synthetic but realistic planner inputs for the speed benchmark: 50 GPU
// instance types (10 families x 5 sizes) x 6 zones x 2 capacity types = 600
// offerings, pending demand of 12 shapes, and existing nodes partly filled.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::bench {

inline std::vector<MigProfile> A100Profiles() {
  return {{"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}}, {"2g.20gb", 2, 2, 19968, {0, 2, 4}},
          {"3g.40gb", 3, 4, 40192, {0, 4}},               {"7g.80gb", 7, 8, 80896, {0}}};
}

inline Snapshot SyntheticCatalog(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u01(0, 1);
  Snapshot s;
  s.time = FromUnixSeconds(1780000000);
  struct Fam {
    const char* family;
    const char* gpu;
    const char* short_name;
    int64_t mem_mib;
    double usd_per_gpu;
    bool mig;
  };
  const Fam fams[] = {
      {"g5", "NVIDIA-A10G", "a10g", 24576, 1.0, false},   {"g6", "NVIDIA-L4", "l4", 23034, 0.8, false},
      {"g4dn", "Tesla-T4", "t4", 16384, 0.53, false},     {"p4d", "A100-40GB", "a100-40gb", 40960, 3.7, false},
      {"p4de", "A100-80GB", "a100-80gb", 81920, 5.1, true}, {"p5", "H100-80GB", "h100-80gb", 81920, 12.3, false},
      {"g6e", "L40S", "l40s", 46068, 1.9, false},         {"p3", "V100-16GB", "v100-16gb", 16384, 3.06, false},
      {"g7", "A10", "a10", 24576, 1.1, false},            {"p5e", "H200", "h200", 144384, 13.5, false},
  };
  const int gpus[] = {1, 1, 4, 4, 8};
  const int vcpus[] = {4, 16, 48, 96, 192};
  const int mem_gib[] = {16, 64, 192, 384, 768};
  const char* sizes[] = {"xlarge", "4xlarge", "12xlarge", "24xlarge", "48xlarge"};
  const char* zones[] = {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"};
  for (const Fam& f : fams) {
    GpuModel m;
    m.name = f.gpu;
    m.short_name = f.short_name;
    m.memory_mib = f.mem_mib;
    if (f.mig) m.mig_profiles = A100Profiles();
    s.gpu_models.push_back(m);
    for (int k = 0; k < 5; ++k) {
      InstanceType t;
      t.name = std::string(f.family) + "." + sizes[k];
      t.family = f.family;
      t.gpu_model = f.gpu;
      t.gpu_count = gpus[k];
      t.gpu_memory_mib = f.mem_mib;
      t.vcpus = vcpus[k];
      t.memory_mib = int64_t(mem_gib[k]) * 1024;
      s.instance_types.push_back(t);
      const double od = gpus[k] * f.usd_per_gpu * (1 + 0.05 * k) + vcpus[k] * 0.02;
      for (const char* z : zones) {
        Offering o;
        o.instance_type = t.name;
        o.region = "us-east-1";
        o.zone = z;
        o.on_demand_usd_per_hour = od;
        o.usd_per_hour = od;
        s.offerings.push_back(o);
        o.capacity_type = CapacityType::kSpot;
        o.usd_per_hour = od * (0.3 + 0.4 * u01(rng));
        o.interruptions_per_hour = 0.01 + 0.14 * u01(rng);
        o.available = u01(rng) > 0.05;
        s.offerings.push_back(o);
      }
    }
  }
  return s;
}

inline DemandUnit Shape(int k) {
  DemandUnit u;
  u.workload_class = k % 3 == 0 ? "training" : k % 3 == 1 ? "inference" : "batch";
  switch (k % 12) {
    case 0: u.gpus = 1; u.cpu_milli = 4000; u.memory_mib = 16384; break;
    case 1: u.gpus = 1; u.cpu_milli = 8000; u.memory_mib = 32768; u.gpu_models = {"a100-80gb", "h100-80gb"}; break;
    case 2: u.gpus = 2; u.cpu_milli = 16000; u.memory_mib = 65536; break;
    case 3: u.gpus = 4; u.cpu_milli = 40000; u.memory_mib = 160000; break;
    case 4: u.gpus = 8; u.cpu_milli = 90000; u.memory_mib = 300000; break;
    case 5: u.gpu_milli = 500; u.cpu_milli = 2000; u.memory_mib = 8192; break;
    case 6: u.gpu_milli = 250; u.cpu_milli = 1000; u.memory_mib = 4096; break;
    case 7: u.mig_profile = "1g.10gb"; u.cpu_milli = 2000; u.memory_mib = 8192; break;
    case 8: u.mig_profile = "3g.40gb"; u.cpu_milli = 4000; u.memory_mib = 16384; break;
    case 9: u.cpu_milli = 2000; u.memory_mib = 4096; break;
    case 10: u.gpus = 1; u.cpu_milli = 4000; u.memory_mib = 16384; u.min_gpu_memory_mib = 40000; break;
    default: u.gpus = 1; u.cpu_milli = 4000; u.memory_mib = 16384; u.interruptible = false; break;
  }
  u.priority = k % 4;
  return u;
}

inline Policy SyntheticPolicy() {
  Policy p;
  NodePoolPolicy pool;
  pool.name = "gpu";
  pool.max_nodes = 1000000;
  p.pools.push_back(pool);
  for (const char* c : {"training", "inference", "batch"}) {
    WorkloadClassPolicy w;
    w.name = c;
    if (std::string(c) == "training") w.max_spot_share = 0.7;
    p.classes.push_back(w);
  }
  p.scaling.max_nodes_added_per_tick = 1000000;
  return p;
}

// `units` pending units of 12 shapes (weighted towards small ones), and
// `existing` ready nodes, each partly filled with 1-GPU work.
inline Snapshot SyntheticSnapshot(int units, int existing, uint32_t seed) {
  Snapshot s = SyntheticCatalog(seed);
  std::mt19937 rng(seed * 7919u + 1);
  for (int i = 0; i < units; ++i) {
    const int r = int(rng() % 100);
    const int k = r < 30 ? 0 : r < 40 ? 5 : r < 48 ? 6 : r < 55 ? 2 : r < 60 ? 3 : r < 63 ? 4 : r < 70 ? 7 : r < 74 ? 8
                : r < 84 ? 9 : r < 90 ? 1 : r < 95 ? 10 : 11;
    DemandUnit u = Shape(k);
    u.id = "u" + std::to_string(i);
    s.pending.push_back(std::move(u));
  }
  for (int i = 0; i < existing; ++i) {
    const Offering& o = s.offerings[rng() % s.offerings.size()];
    Node n;
    n.id = "node-" + std::to_string(i);
    n.instance_id = "i-" + std::to_string(100000 + i);
    n.pool = "gpu";
    n.offering = o;
    n.launch_time = s.time - Seconds(3600 * (1 + rng() % 48));
    int gpus = 0;
    for (const auto& t : s.instance_types)
      if (t.name == o.instance_type) gpus = t.gpu_count;
    const int used = int(rng() % uint32_t(gpus + 1));
    for (int k = 0; k < used; ++k) {
      DemandUnit u = Shape(0);
      u.id = n.id + "/r" + std::to_string(k);
      n.running.push_back(std::move(u));
    }
    s.nodes.push_back(std::move(n));
  }
  return s;
}

}  // namespace gpuscaler::bench
