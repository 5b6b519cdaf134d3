#include "gpuscaler/solver/cost_model.h"

#include <algorithm>
#include <cmath>

namespace gpuscaler {

double MarginalUsdPerHour(const Offering& offering) {
  if (offering.capacity_type != CapacityType::kReserved) return offering.usd_per_hour;
  const double od = offering.on_demand_usd_per_hour > 0 ? offering.on_demand_usd_per_hour : offering.usd_per_hour;
  return kReservedMarginalShare * od;
}

bool SpotOverCeiling(const Offering& offering, double max_price_fraction, double max_interruptions_per_hour) {
  if (offering.capacity_type != CapacityType::kSpot) return false;
  constexpr double kEpsilon = 1e-9;
  const double od = offering.on_demand_usd_per_hour > 0 ? offering.on_demand_usd_per_hour : offering.usd_per_hour;
  return offering.usd_per_hour > max_price_fraction * od + kEpsilon ||
         std::max(0.0, offering.interruptions_per_hour) > max_interruptions_per_hour + kEpsilon;
}

double ShareOfNode(double gpu_w, int64_t cpu_milli, const InstanceType& t) {
  if (gpu_w > 0 && t.gpu_count > 0) return std::min(1.0, gpu_w / t.gpu_count);
  if (t.vcpus > 0) return std::min(1.0, static_cast<double>(cpu_milli) / (t.vcpus * 1000.0));
  return 0;
}

double LostWorkHoursPerInterruption(const DemandUnit& u) {
  const double runtime_h = double(std::max<int64_t>(0, u.expected_runtime.count())) / 3600.0;
  const double ckpt_h = double(std::max<int64_t>(0, u.checkpoint_interval.count())) / 3600.0;
  double lost = ckpt_h > 0 ? std::min(ckpt_h, runtime_h) / 2 : runtime_h / 2;
  if (u.checkpoint_on_notice) lost = std::min(lost, double(kSpotNoticeWindow.count()) / 3600.0);
  return lost;
}

double LostHoursPerInterruption(const DemandUnit& u) {
  return LostWorkHoursPerInterruption(u) + double(std::max<int64_t>(0, u.restart_cost.count())) / 3600.0;
}

double OnDemandValueUsdPerHour(const DemandUnit& unit, const Offering& offering, const InstanceType& type) {
  const double od =
      offering.on_demand_usd_per_hour > 0 ? offering.on_demand_usd_per_hour : offering.usd_per_hour;
  return od * ShareOfNode(GpuShare(unit), std::max<int64_t>(0, unit.cpu_milli), type);
}

double ReplacementWaitHours(const Snapshot& snapshot, const Offering& offering, const InstanceType& type) {
  auto it = snapshot.warmup_seconds_by_family.find(type.FamilyOrName());
  if (it != snapshot.warmup_seconds_by_family.end()) return std::max(0, it->second) / 3600.0;
  return double(std::max<int64_t>(0, offering.launch_latency.count())) / 3600.0;
}

double GangInterruptionReach(int size, double co_reclaim_share) {
  if (size <= 1) return 1;
  if (co_reclaim_share <= 0) return size;
  if (co_reclaim_share >= 1) return 1;
  return (1 - std::pow(1 - co_reclaim_share, size)) / co_reclaim_share;
}

double ExpectedInterruptionUsdPerHour(const DemandUnit& unit, const Offering& offering,
                                      const InstanceType& type, double replacement_wait_h) {
  if (offering.capacity_type != CapacityType::kSpot || offering.interruptions_per_hour <= 0) return 0;
  return offering.interruptions_per_hour *
         (LostHoursPerInterruption(unit) + std::max(0.0, replacement_wait_h)) *
         OnDemandValueUsdPerHour(unit, offering, type) *
         GangInterruptionReach(InterruptionReach(unit), offering.co_reclaim_share);
}

double ExpectedInterruptionUsdPerHour(const DemandUnit& unit, const Offering& offering,
                                      const InstanceType& type) {
  return ExpectedInterruptionUsdPerHour(
      unit, offering, type, double(std::max<int64_t>(0, offering.launch_latency.count())) / 3600.0);
}

}  // namespace gpuscaler
