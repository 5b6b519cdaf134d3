// Helpers shared by the AzureProvider's files (azure_provider*.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <string_view>

#include "gpuscaler/cloud/azure_provider.h"

namespace gpuscaler::cloud {

// A JSON object of strings as a map (tags); other values are skipped.
std::map<std::string, std::string> AzureStringMap(const nlohmann::json& object);
// The value after "/<segment>/" in an ARM resource id (case-insensitive
// segment: "resourceGroups"), or "".
std::string AzureIdPart(std::string_view id, std::string_view segment);
// The node resource group of an AKS cluster ("MC_…"), or a scale set's tags
// that AKS sets (aks-managed-*): the set is AKS's.
bool IsAksManaged(const std::string& resource_group, const std::map<std::string, std::string>& tags);

}  // namespace gpuscaler::cloud
