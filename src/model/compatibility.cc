#include "gpuscaler/model/compatibility.h"

#include <algorithm>

#include "gpuscaler/model/find_by_name.h"

namespace gpuscaler {

bool GpuModelListed(const std::vector<std::string>& names, const std::string& gpu_model,
                    const GpuModel* gpu) {
  if (names.empty() || Contains(names, gpu_model)) return true;
  return gpu != nullptr && (Contains(names, gpu->name) || Contains(names, gpu->short_name));
}

bool UnitFitsType(const DemandUnit& unit, const InstanceType& type, const GpuModel* gpu,
                  int* mig_index) {
  int mig = -1;
  if (mig_index != nullptr) *mig_index = -1;
  if (unit.cpu_milli > int64_t{type.vcpus} * 1000 || unit.memory_mib > type.memory_mib) return false;
  if (!NeedsGpu(unit)) return true;
  if (type.gpu_count <= 0) return false;
  if (!GpuModelListed(unit.gpu_models, type.gpu_model, gpu)) return false;
  if (unit.gpus > type.gpu_count) return false;
  int64_t memory_mib = type.gpu_memory_mib > 0 ? type.gpu_memory_mib : (gpu ? gpu->memory_mib : 0);
  if (unit.gpus <= 0 && unit.gpu_milli <= 0) {
    if (gpu == nullptr) return false;
    const auto& profiles = gpu->mig_profiles;
    for (size_t i = 0; i < profiles.size() && mig < 0; ++i) {
      if (profiles[i].name == unit.mig_profile) mig = static_cast<int>(i);
    }
    if (mig < 0) return false;
    memory_mib = profiles[static_cast<size_t>(mig)].memory_mib;
  }
  if (unit.min_gpu_memory_mib > 0 && memory_mib < unit.min_gpu_memory_mib) return false;
  if (mig_index != nullptr) *mig_index = mig;
  return true;
}

}  // namespace gpuscaler
