#include "gpuscaler/model/snapshot.h"

#include "gpuscaler/model/find_by_name.h"

namespace gpuscaler {

int GpusOf(const Snapshot& s, const Node& n) {
  const InstanceType* t = FindByName(s.instance_types, n.offering.instance_type);
  return t != nullptr ? t->gpu_count : 0;
}

FleetCounts CountFleet(const Snapshot& s) {
  FleetCounts counts;
  for (const Node& n : s.nodes) {
    ++counts.nodes;
    if (n.offering.capacity_type == CapacityType::kSpot) ++counts.spot_nodes;
    counts.gpus += GpusOf(s, n);
  }
  return counts;
}

}  // namespace gpuscaler
