// The instances of the solver_quality benchmark, made from a seed, and the
// questions the MIP and the baselines ask of them. The first family has new
// nodes only (whole-GPU and CPU-only shapes, spot and on-demand, per-class
// spot share); the second puts existing nodes with some GPUs in use beside
// pending units pinned to GPU models, zones and a minimum GPU memory, and
// starts with a fixed zone-e L40S case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::bench {

struct Instance {
  Snapshot snap;
  Policy policy;
  std::vector<int> usable;  // offerings the MIP and baselines may use
};

// The first family: 5 of 9 types in 3 zones, on-demand and spot, and 10-60
// pending units in 2-5 shapes.
Instance MakeInstance(uint32_t seed);

// The second family's fixed case: the only L40S room in zone z-e is an
// on-demand g6e.48xlarge with 6 of its 8 GPUs free; six 1-GPU units must run
// on L40S in z-e and one 4-GPU unit may run anywhere.
Instance FreeL40sRoomInZoneE();

// The second family, seeded (the benchmark uses seeds 5000 + i).
Instance MakeExistingInstance(uint32_t seed);

// The instance type of `o` (the first type when `s` has no such type).
const InstanceType& TypeOf(const Snapshot& s, const Offering& o);

// Whether unit `u` may run on a node of `o`: spot only when interruptible,
// and within its GPU count, zones, GPU memory and GPU models.
bool Compatible(const Snapshot& s, const DemandUnit& u, const Offering& o);

// Whether all of `units` fit together on one new node of `o`.
bool Fits(const Snapshot& s, const std::vector<const DemandUnit*>& units, const Offering& o);

// The pending units by shape (the "s<shape>-" prefix of their ids, which are
// consecutive): one representative and the count of each.
struct Groups {
  std::vector<const DemandUnit*> rep;
  std::vector<int> count;
};
Groups GroupUnits(const Snapshot& s);

// What running work leaves free on each existing node (whole GPUs, vCPU,
// memory), by node index.
struct FreeRoom {
  int gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};
std::vector<FreeRoom> FreeRooms(const Snapshot& s);

}  // namespace gpuscaler::bench
