// Demand: what needs GPUs. A DemandUnit is one schedulable piece of work
// (a pod, a queued job, or a share of a queue's backlog) with its shape and
// how it tolerates interruption. Values only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// A unit's place in a gang: one multi-node job whose members start together
// or not at all (a job's ranks wait for each other before any progress) and
// are lost together (a reclaim of any member's node sends every member back
// to the last checkpoint). Members are units of one shape, one per node.
struct GangMembership {
  std::string name;  // the gang's id, shared by its members
  int size = 0;      // members in the whole gang, >= 2
  // Topology: every member in one zone; every member on one instance type.
  bool same_zone = true;
  bool same_instance_type = false;

  bool operator==(const GangMembership&) const = default;
};

struct DemandUnit {
  std::string id;                // pod uid, job id, or "<class>/<n>" for queue-derived units
  std::string workload_class;    // policy class name
  // Who pays for it (usage rows, budget.teams caps) when it is not its
  // class's team: in Kubernetes the pod's team label. Empty: the class's
  // team. See TeamOf (policy.h).
  std::string team;
  // Whole GPUs; all of them on one node. 0 with gpu_milli or mig_profile set
  // means a fraction of one GPU; 0 with neither means CPU-only work.
  int gpus = 0;
  // Time-shared fraction of one GPU (1..999), as in GPU-sharing schedulers.
  int gpu_milli = 0;
  // A MIG profile ("1g.10gb"); the node's GPU must support it.
  std::string mig_profile;
  // GPU constraints: any of these GpuModel names or short names (empty: any),
  // and at least this much memory per GPU.
  std::vector<std::string> gpu_models;
  int64_t min_gpu_memory_mib = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int priority = 0;              // higher is placed first and kept under a budget
  bool interruptible = true;     // may run on spot
  Seconds expected_runtime{3600};
  Seconds checkpoint_interval{1800};  // 0: no checkpoints, all progress lost
  bool checkpoint_on_notice = false;  // checkpoints when the spot notice evicts it
  Seconds restart_cost{300};     // boot + image pull + model load after a move
  // Placement constraints from node selectors / affinity; empty: any.
  std::vector<std::string> zones;
  std::vector<std::string> instance_types;
  std::optional<CapacityType> capacity_type;
  std::string pool;              // pin to a node pool; empty: any matching pool
  // Existing nodes (by Node::id) it may not run on: their NoSchedule or
  // NoExecute taints it does not tolerate.
  std::vector<std::string> avoid_nodes;
  std::map<std::string, std::string> labels;
  // Deferrable work: the time by which it must have finished (its
  // submission plus its class's deadline, or its own). Set, the planner runs
  // it by Uniform Progress (solver/deadline_hold.h).
  std::optional<WallTime> deadline;
  // With a deadline, the terms of its Uniform Progress line: when the work
  // was submitted, and the whole job's runtime as the work states it (0: not
  // stated, no line: the unit is held by its slack alone). By time t the line
  // asks for total_work x (t - submitted) / (deadline - submitted) of it to
  // be done.
  std::optional<WallTime> submitted;
  Seconds total_work{0};
  // A running unit: since when its current run makes progress (after its
  // restart), so the work left at time t is expected_runtime less the time
  // since. Unset on pending units, and where the start is not known.
  std::optional<WallTime> progressing_since;
  // Set: the unit is one member of a gang.
  std::optional<GangMembership> gang;
};

// Units whose work one interruption of this unit's node loses: the gang's
// size for a gang member, else 1.
int InterruptionReach(const DemandUnit& u);

// The unit's share of GPUs, in GPUs: `gpus` when > 0, else gpu_milli / 1000
// when > 0, else for a MIG profile "Ng.<memory>" N / kMigComputeSlices (1/7
// when N is missing or out of range); 0 for CPU-only work. What spot shares,
// zone spread and per-class GPU counts add up.
double GpuShare(const DemandUnit& u);

// Whether the unit needs a GPU at all: GpuShare(u) > 0.
bool NeedsGpu(const DemandUnit& u);

// GPUs the unit keeps from other work when GPUs are handed out whole: its
// whole GPUs, one for a fraction or a MIG instance, 0 for CPU-only work.
int WholeGpusTaken(const DemandUnit& u);

}  // namespace gpuscaler
