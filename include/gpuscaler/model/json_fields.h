// Tolerant field readers for JSON that comes from the network (Kubernetes
// watch events and Leases, SQS messages, the EC2 metadata service, the
// RabbitMQ API): a missing key, a value of another type or a non-object
// reads as empty / `fallback`. They never throw, unlike nlohmann's
// value(key, default), which throws type_error on a present field of
// another type.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuscaler {

std::string StringAt(const nlohmann::json& j, const char* key);
const nlohmann::json& ObjectAt(const nlohmann::json& j, const char* key);
const nlohmann::json& ArrayAt(const nlohmann::json& j, const char* key);
int64_t IntAt(const nlohmann::json& j, const char* key, int64_t fallback);

}  // namespace gpuscaler
