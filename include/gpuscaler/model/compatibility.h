// Whether work of a given shape can run on an instance type: the one rule the
// planner places by and the policy loader checks classes against. Values
// only; no thread-safety concerns.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/gpu.h"
#include "gpuscaler/model/instance.h"

namespace gpuscaler {

// Whether the list `names` (GpuModel names or short names, as policies and
// units write them; empty: any) accepts a GPU whose model is `gpu_model`, an
// InstanceType::gpu_model. `gpu` is that model when known, so that its name
// and short name both match.
bool GpuModelListed(const std::vector<std::string>& names, const std::string& gpu_model,
                    const GpuModel* gpu);

// Whether one unit of `unit`'s shape fits on an empty node of `type`, whose
// GPU model is `gpu` (nullptr when unknown). The vCPU and memory must fit.
// Work that needs a GPU (NeedsGpu) also needs
//  - a GPU type whose model the unit accepts (GpuModelListed),
//  - at most type.gpu_count whole GPUs,
//  - for a MIG unit (a mig_profile and neither gpus nor gpu_milli): a known
//    GPU model with that profile,
//  - at least min_gpu_memory_mib per GPU: the MIG instance's memory for a MIG
//    unit, else type.gpu_memory_mib (the model's memory when that is 0).
// Other units on the node, zones, pools and capacity types are not its
// concern. `*mig_index`, when given, is set to the profile's index in
// gpu->mig_profiles for a MIG unit that fits, else -1.
bool UnitFitsType(const DemandUnit& unit, const InstanceType& type, const GpuModel* gpu,
                  int* mig_index = nullptr);

}  // namespace gpuscaler
