// Helpers shared by gcp_provider.cc and gcp_provider_list.cc.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gpuscaler/cloud/gcp_provider.h"

namespace gpuscaler::cloud {

// "us-central1-a" -> "us-central1".
std::string RegionOfZone(std::string_view zone);
// The value of metadata item `key` of an instance resource, or "".
std::string MetadataItem(const nlohmann::json& resource, const char* key);
// A quota figure as people read it ("16", "2.5").
std::string FormatQuota(double value);
// The reservationAffinity that targets `reservation` by name.
nlohmann::json GcpReservationAffinity(const std::string& reservation);
// The reservation an instance (or a template's properties) targets by
// name: reservationAffinity SPECIFIC_RESERVATION with one value; "" otherwise.
std::string SpecificReservationOf(const nlohmann::json& resource);

}  // namespace gpuscaler::cloud
