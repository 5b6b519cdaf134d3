// Private to src/kube: the object parsers on an already parsed JSON value
// (watch events carry the object inside the event).
#pragma once

#include <nlohmann/json.hpp>

#include "gpuscaler/kube/objects.h"
#include "gpuscaler/model/json_fields.h"  // StringAt, ObjectAt, ArrayAt, IntAt

namespace gpuscaler::kube {

Result<PodInfo> PodFromJson(const nlohmann::json& j);
Result<NodeInfo> NodeFromJson(const nlohmann::json& j);
// A metav1.Time or MicroTime field, to the second; the epoch when absent or malformed.
WallTime TimeAt(const nlohmann::json& object, const char* key);
// metadata.resourceVersion of any object, or "".
std::string ResourceVersionOf(const nlohmann::json& j);

}  // namespace gpuscaler::kube
