// Instance types, offerings and capacity types: what can be bought.
//
// An InstanceType is a machine shape (GPU model and count, vCPU, memory). An
// Offering is one way to buy it: instance type × region/zone × capacity type,
// with its current hourly price and risk. Values only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/time.h"

namespace gpuscaler {

// kReserved: a slot of a capacity reservation or Capacity Block (see
// model/reservation.h), already paid for.
enum class CapacityType { kOnDemand, kSpot, kReserved };

// "on-demand" / "spot" / "reserved", as Karpenter's karpenter.sh/capacity-type
// label says it.
std::string_view ToString(CapacityType c);
std::optional<CapacityType> ParseCapacityType(std::string_view text);

// "TYPE/ZONE/CAPACITY", and "/RESERVATION" after it for a reserved one: the
// Offering::Key of an offering with these fields.
std::string OfferingKey(std::string_view instance_type, std::string_view zone, CapacityType capacity,
                        std::string_view reservation_id = {});

struct InstanceType {
  std::string name;        // "g5.12xlarge"
  std::string family;      // "g5"
  std::string gpu_model;   // GpuModel::name; empty for CPU-only types
  int gpu_count = 0;
  int64_t gpu_memory_mib = 0;  // per GPU
  int vcpus = 0;
  int64_t memory_mib = 0;
  int64_t local_nvme_gb = 0;
  int64_t network_mbps = 0;

  // The family, or the type's own name when the catalog names no family:
  // the key warm-up times and spot failure domains are kept under.
  const std::string& FamilyOrName() const { return family.empty() ? name : family; }
};

struct Offering {
  std::string instance_type;  // InstanceType::name
  std::string region;         // "us-east-1"
  std::string zone;           // "us-east-1b"
  CapacityType capacity_type = CapacityType::kOnDemand;
  double usd_per_hour = 0;
  // On-demand list price of the same type and region: the yardstick for spot
  // savings and for valuing work lost to interruptions.
  double on_demand_usd_per_hour = 0;
  // Expected spot interruptions per node-hour (0 for on-demand).
  double interruptions_per_hour = 0;
  // When a reclaim takes one spot node of this offering's family and zone,
  // the share of the other spot nodes there expected to go with it (0:
  // reclaims are independent; 1: the whole domain goes at once). Learned
  // from notices (SpotRiskLearner); what a gang's spot risk depends on.
  double co_reclaim_share = 0;
  // False when the cloud reported no capacity recently (see the actuator).
  bool available = true;
  Seconds launch_latency{180};  // typical time from request to Ready node
  // Typical time from starting a stopped (warm) node of this type to its
  // GPUs allocatable again (pools[].warm).
  Seconds wake_latency{60};
  // Reserved offerings only: the Reservation::id whose slots it launches
  // into. `usd_per_hour` is then what one slot costs whether used or not
  // (Reservation::usd_per_hour), not what a launch adds to the bill.
  std::string reservation_id;

  // "g5.12xlarge/us-east-1b/spot": stable key for maps, logs and the audit
  // store; a reserved offering's ends with its reservation
  // ("p5.48xlarge/us-east-1a/reserved/cr-0abc").
  std::string Key() const;
};

}  // namespace gpuscaler
