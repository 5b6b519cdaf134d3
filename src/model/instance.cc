#include "gpuscaler/model/instance.h"

namespace gpuscaler {

std::string_view ToString(CapacityType c) {
  return c == CapacityType::kSpot ? "spot" : "on-demand";
}

std::optional<CapacityType> ParseCapacityType(std::string_view text) {
  if (text == "on-demand" || text == "on_demand" || text == "ondemand") return CapacityType::kOnDemand;
  if (text == "spot") return CapacityType::kSpot;
  return std::nullopt;
}

std::string Offering::Key() const {
  std::string key = instance_type;
  key += '/';
  key += zone;
  key += '/';
  key += ToString(capacity_type);
  return key;
}

}  // namespace gpuscaler
