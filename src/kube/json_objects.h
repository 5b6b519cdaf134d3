// Private to src/kube: the object parsers on an already parsed JSON value
// (watch events carry the object inside the event).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuscaler/kube/objects.h"

namespace gpuscaler::kube {

// Tolerant field readers for JSON from the network (watch events, Leases,
// lists): a missing key, a value of another type or a non-object reads as
// empty / `fallback`; they never throw.
std::string StringAt(const nlohmann::json& j, const char* key);
const nlohmann::json& ObjectAt(const nlohmann::json& j, const char* key);
const nlohmann::json& ArrayAt(const nlohmann::json& j, const char* key);
int64_t IntAt(const nlohmann::json& j, const char* key, int64_t fallback);

Result<PodInfo> PodFromJson(const nlohmann::json& j);
Result<NodeInfo> NodeFromJson(const nlohmann::json& j);
// metadata.resourceVersion of any object, or "".
std::string ResourceVersionOf(const nlohmann::json& j);

}  // namespace gpuscaler::kube
