// Which pending units the planner treats as one: the same requirements in
// every field that decides where a unit may run and what it costs there.
#include <functional>
#include <string>

#include "planner_impl.h"

namespace gpuscaler::solver_detail {

size_t DemandKeyHash(const DemandUnit& u) {
  size_t h = std::hash<std::string>()(u.workload_class);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(size_t(u.gpus));
  mix(size_t(u.gpu_milli));
  mix(std::hash<std::string>()(u.mig_profile));
  mix(size_t(u.cpu_milli));
  mix(size_t(u.memory_mib));
  mix(size_t(u.min_gpu_memory_mib));
  mix(size_t(u.priority));
  mix(size_t(u.interruptible));
  mix(std::hash<std::string>()(u.pool));
  mix(size_t(u.expected_runtime.count()));
  mix(size_t(u.checkpoint_interval.count()));
  mix(size_t(u.checkpoint_on_notice));
  mix(size_t(u.restart_cost.count()));
  for (const auto& s : u.gpu_models) mix(std::hash<std::string>()(s));
  for (const auto& s : u.zones) mix(std::hash<std::string>()(s));
  for (const auto& s : u.instance_types) mix(std::hash<std::string>()(s));
  for (const auto& s : u.avoid_nodes) mix(std::hash<std::string>()(s));
  mix(u.capacity_type ? size_t(*u.capacity_type) + 1 : 0);
  mix(std::hash<std::string>()(u.team));
  return h;
}

bool SameDemand(const DemandUnit& a, const DemandUnit& b) {
  return a.workload_class == b.workload_class && a.gpus == b.gpus && a.gpu_milli == b.gpu_milli &&
         a.mig_profile == b.mig_profile && a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib &&
         a.min_gpu_memory_mib == b.min_gpu_memory_mib && a.priority == b.priority &&
         a.interruptible == b.interruptible && a.pool == b.pool && a.expected_runtime == b.expected_runtime &&
         a.checkpoint_interval == b.checkpoint_interval && a.checkpoint_on_notice == b.checkpoint_on_notice &&
         a.restart_cost == b.restart_cost &&
         a.gpu_models == b.gpu_models && a.zones == b.zones && a.instance_types == b.instance_types &&
         a.avoid_nodes == b.avoid_nodes &&
         a.capacity_type == b.capacity_type && a.team == b.team && a.gang.has_value() == b.gang.has_value() &&
         (!a.gang || (a.gang->size == b.gang->size && a.gang->same_zone == b.gang->same_zone &&
                      a.gang->same_instance_type == b.gang->same_instance_type));
}

}  // namespace gpuscaler::solver_detail
