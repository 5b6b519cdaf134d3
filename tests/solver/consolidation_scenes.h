// Scenes for the planner's consolidation tests (planner_consolidation_test.cc,
// consolidation_strategies_test.cc): small fleets on which one consolidation
// move pays, described above each.
#pragma once

#include <string>
#include <utility>

#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "solver/fixtures.h"

namespace gpuscaler::testing {

// Adds `type` to the catalog, with an on-demand offering in us-east-1a.
inline void AddOnDemandType(Snapshot& s, InstanceType type, double usd_per_hour) {
  s.offerings.push_back(
      testing::MakeOffering(type.name, "us-east-1a", CapacityType::kOnDemand, usd_per_hour));
  s.instance_types.push_back(std::move(type));
}

inline DemandUnit Milli(const std::string& id, int milli) {
  DemandUnit u = Unit(id, 0, 1000, 2048);
  u.gpu_milli = milli;
  return u;
}

inline Snapshot ConsolidationSnapshot() {
  Snapshot s = BaseSnapshot();
  // A half-used 4-GPU node, and a 1-GPU node whose unit fits on it.
  s.nodes.push_back(MakeNode(s, "big", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                             {Unit("b1", 1), Unit("b2", 1)}));
  s.nodes.push_back(
      MakeNode(s, "small", "g5.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("s1", 1)}));
  s.nodes.push_back(MakeNode(s, "empty", "g5.xlarge", "us-east-1b", CapacityType::kOnDemand));
  return s;
}

// Two g6.xlarge on-demand nodes, each with a fractional unit whose vCPUs
// leave no room for the other's: neither node can go alone (no existing room,
// no cheaper single node), but one g6.4xlarge (1 L4, 16 vCPU) holds both for
// less than the two.
inline Snapshot TwoNodesOneNodeHoldsSnapshot() {
  Snapshot s = BaseSnapshot({"us-east-1a"});
  AddOnDemandType(s, Type("g6.4xlarge", "g6", "NVIDIA-L4", 1, 23034, 16, 64), 1.323);
  for (const std::string id : {"a", "b"}) {
    DemandUnit u = OnDemandOnly(Milli("w-" + id, 400));
    u.cpu_milli = 3000;
    s.nodes.push_back(MakeNode(s, id, "g6.xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
  }
  return s;
}

// A CPU-heavy unit without a GPU shares a g6.8xlarge (1 L4, 32 vCPU, 2.014
// $/h) with a small GPU unit; a 12-vCPU GPU replica has a g6.4xlarge (1 L4,
// 16 vCPU, 1.323 $/h) of its own. No node holds all three for less than
// 3.337 $/h and neither node can go alone, but split differently, the
// replica beside the CPU-heavy unit and the small unit on a g6.xlarge (0.805
// $/h), they cost 2.819 $/h. Both nodes have run for seven hours.
inline Snapshot SplitSnapshot() {
  Snapshot s = BaseSnapshot({"us-east-1a"});
  AddOnDemandType(s, Type("g6.8xlarge", "g6", "NVIDIA-L4", 1, 23034, 32, 128), 2.014);
  AddOnDemandType(s, Type("g6.4xlarge", "g6", "NVIDIA-L4", 1, 23034, 16, 64), 1.323);
  const DemandUnit cpu_heavy = OnDemandOnly(Unit("cpu-heavy", 0, 20000, 65536));
  const DemandUnit small = OnDemandOnly(Unit("small", 1, 4000, 16384));
  const DemandUnit replica = OnDemandOnly(Unit("replica", 1, 12000, 16384));
  s.nodes.push_back(
      MakeNode(s, "a", "g6.8xlarge", "us-east-1a", CapacityType::kOnDemand, {cpu_heavy, small}));
  s.nodes.push_back(MakeNode(s, "b", "g6.4xlarge", "us-east-1a", CapacityType::kOnDemand, {replica}));
  for (Node& n : s.nodes) n.launch_time = s.time - Seconds(7 * 3600);
  return s;
}

// A g6.8xlarge (1 L4, 32 vCPU, 2.014 $/h) holds a CPU-heavy unit without a
// GPU and a small GPU unit. Neither fits one cheaper node, and the CPU-heavy
// one fits no other node; but the small unit fits the free L4 of a
// g6.12xlarge that stays ("r", do-not-disrupt), and the CPU-heavy one alone
// an m5.8xlarge (32 vCPU, 1.536 $/h): 0.478 $/h less, less the restart cost.
// The pool allows both families (PartlyIntoFreeRoomPolicy).
inline Snapshot PartlyIntoFreeRoomSnapshot() {
  Snapshot s = BaseSnapshot({"us-east-1a"});
  AddOnDemandType(s, Type("g6.8xlarge", "g6", "NVIDIA-L4", 1, 23034, 32, 128), 2.014);
  AddOnDemandType(s, Type("m5.8xlarge", "m5", "", 0, 0, 32, 128), 1.536);
  Node r = MakeNode(s, "r", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                    Units("busy", 3, OnDemandOnly(Unit("", 1, 12000, 32768))));
  r.do_not_disrupt = true;
  s.nodes.push_back(r);
  s.nodes.push_back(MakeNode(
      s, "a", "g6.8xlarge", "us-east-1a", CapacityType::kOnDemand,
      {OnDemandOnly(Unit("cpu-heavy", 0, 20000, 65536)), OnDemandOnly(Unit("small", 1, 4000, 16384))}));
  s.nodes[1].launch_time = s.time - Seconds(7 * 3600);
  return s;
}

inline Policy PartlyIntoFreeRoomPolicy() {
  Policy p = BasePolicy();
  p.pools[0].families = {"g6", "m5"};
  p.disruption.min_savings_usd_per_hour = 0.3;
  return p;
}

// Four on-demand units of one GPU and 10 vCPU each sit on a g6.4xlarge each
// (1 L4, 16 vCPU, 1.323 $/h): no node can go alone, no two or three fit a
// node cheaper than theirs, but one g6.12xlarge (4 L4, 48 vCPU, 4.602 $/h)
// holds all four for 0.69 $/h less than 5.292.
inline Snapshot FourSingleGpuNodesSnapshot() {
  Snapshot s = BaseSnapshot({"us-east-1a"});
  AddOnDemandType(s, Type("g6.4xlarge", "g6", "NVIDIA-L4", 1, 23034, 16, 64), 1.323);
  for (const std::string id : {"a", "b", "c", "d"}) {
    DemandUnit u = OnDemandOnly(Unit("w-" + id, 1));
    u.cpu_milli = 10000;
    u.restart_cost = Seconds(60);  // moving all four costs 0.088 $/h: they save 11 %
    s.nodes.push_back(MakeNode(s, id, "g6.4xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
  }
  return s;
}

}  // namespace gpuscaler::testing
