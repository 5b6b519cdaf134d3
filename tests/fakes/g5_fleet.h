// Controller-level test fixtures: a one-type catalog, g5.xlarge (one A10G,
// 4 vCPU, 16 GiB) in us-east-1 at the given on-demand and spot prices in
// `zones`, and a policy with one pool "gpu", one class "batch" and no
// scale-down damping.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::testing {

inline Catalog G5XlargeCatalog(std::vector<std::string> zones = {"us-east-1a", "us-east-1b"},
                               double on_demand_usd = 1.0, double spot_usd = 0.4) {
  Catalog c;
  c.gpu_models = {{"NVIDIA-A10G", "a10g", 22888, {}}};
  InstanceType t;
  t.name = "g5.xlarge";
  t.family = "g5";
  t.gpu_model = "NVIDIA-A10G";
  t.gpu_count = 1;
  t.vcpus = 4;
  t.memory_mib = 16384;
  c.instance_types = {t};
  RegionPrices r;
  r.region = "us-east-1";
  r.zones = std::move(zones);
  r.on_demand_usd_per_hour = {{"g5.xlarge", on_demand_usd}};
  r.spot_usd_per_hour = {{"g5.xlarge", spot_usd}};
  c.regions = {r};
  return c;
}

inline Policy UndampedGpuPolicy() {
  Policy p;
  NodePoolPolicy pool;
  pool.name = "gpu";
  p.pools = {pool};
  WorkloadClassPolicy cls;
  cls.name = "batch";
  p.classes = {cls};
  p.scaling.scale_down_stabilization = Seconds(0);
  p.scaling.scale_down_cooldown = Seconds(0);
  return p;
}

}  // namespace gpuscaler::testing
