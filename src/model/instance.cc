#include "gpuscaler/model/instance.h"

namespace gpuscaler {

std::string_view ToString(CapacityType c) {
  switch (c) {
    case CapacityType::kSpot: return "spot";
    case CapacityType::kReserved: return "reserved";
    case CapacityType::kOnDemand: break;
  }
  return "on-demand";
}

std::optional<CapacityType> ParseCapacityType(std::string_view text) {
  if (text == "on-demand" || text == "on_demand" || text == "ondemand") return CapacityType::kOnDemand;
  if (text == "spot") return CapacityType::kSpot;
  if (text == "reserved") return CapacityType::kReserved;
  return std::nullopt;
}

std::string OfferingKey(std::string_view instance_type, std::string_view zone, CapacityType capacity,
                        std::string_view reservation_id) {
  std::string key(instance_type);
  key += '/';
  key += zone;
  key += '/';
  key += ToString(capacity);
  if (capacity == CapacityType::kReserved) {
    key += '/';
    key += reservation_id;
  }
  return key;
}

std::string Offering::Key() const { return OfferingKey(instance_type, zone, capacity_type, reservation_id); }

}  // namespace gpuscaler
