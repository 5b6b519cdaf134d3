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

std::string Offering::Key() const {
  std::string key = instance_type;
  key += '/';
  key += zone;
  key += '/';
  key += ToString(capacity_type);
  if (capacity_type == CapacityType::kReserved) {
    key += '/';
    key += reservation_id;
  }
  return key;
}

}  // namespace gpuscaler
