#include "gpuscaler/signals/rabbitmq.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::signals {
namespace {

using nlohmann::json;

// Counts arrive as JSON integers; a float with no fraction (some proxies
// re-encode numbers) is accepted too.
Status ReadCount(const json& q, const char* key, std::optional<int64_t>* out) {
  auto it = q.find(key);
  if (it == q.end() || it->is_null()) return Status::Ok();
  if (it->is_number_integer()) {
    int64_t v = it->get<int64_t>();
    if (v < 0) return Error::InvalidInput(std::string("rabbitmq: ") + key + " is negative");
    *out = v;
    return Status::Ok();
  }
  if (it->is_number_float()) {
    double v = it->get<double>();
    if (v >= 0 && v < 9e15 && std::floor(v) == v) {
      *out = static_cast<int64_t>(v);
      return Status::Ok();
    }
  }
  return Error::InvalidInput(std::string("rabbitmq: ") + key + " is not a non-negative integer");
}

// Numbers only; "" and null (old and new servers' "no value") read as empty.
std::optional<double> ReadNumber(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> ReadRate(const json& j, const char* details_key) {
  auto it = j.find(details_key);
  if (it == j.end() || !it->is_object()) return std::nullopt;
  return ReadNumber(*it, "rate");
}

Result<QueueStats> ParseQueueObject(const json& q) {
  if (!q.is_object()) return Error::InvalidInput("rabbitmq: queue is not a JSON object");
  if (!q.contains("name") && q.contains("error")) {
    std::string error = StringAt(q, "error");
    std::string reason = StringAt(q, "reason");
    std::string text = "rabbitmq: " + error + (reason.empty() ? "" : " (" + reason + ")");
    if (error == "Object Not Found" || reason == "Not Found") return Error::NotFound(std::move(text));
    return Error::InvalidInput(std::move(text));
  }
  QueueStats out;
  auto name = q.find("name");
  if (name == q.end() || !name->is_string()) return Error::InvalidInput("rabbitmq: queue has no name");
  out.name = name->get<std::string>();
  out.vhost = StringAt(q, "vhost");
  out.state = StringAt(q, "state");
  out.type = StringAt(q, "type");
  for (auto [key, field] : {std::pair{"messages_ready", &out.messages_ready},
                            std::pair{"messages_unacknowledged", &out.messages_unacknowledged},
                            std::pair{"messages", &out.messages}, std::pair{"consumers", &out.consumers}}) {
    Status s = ReadCount(q, key, field);
    if (!s.ok()) return s.error().WithContext("queue " + out.name);
  }
  out.consumer_utilisation = ReadNumber(q, "consumer_utilisation");
  out.messages_ready_rate_per_s = ReadRate(q, "messages_ready_details");
  auto stats = q.find("message_stats");
  if (stats != q.end() && stats->is_object()) {
    out.publish_rate_per_s = ReadRate(*stats, "publish_details");
    out.deliver_get_rate_per_s = ReadRate(*stats, "deliver_get_details");
    out.ack_rate_per_s = ReadRate(*stats, "ack_details");
  }
  return out;
}

}  // namespace

Result<QueueStats> ParseQueueResponse(std::string_view body) {
  json root = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error::InvalidInput("rabbitmq: response is not JSON");
  return ParseQueueObject(root);
}

Result<std::vector<QueueStats>> ParseQueueListResponse(std::string_view body) {
  json root = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error::InvalidInput("rabbitmq: response is not JSON");
  const json* items = &root;
  if (root.is_object()) {
    auto it = root.find("items");
    if (it == root.end()) {
      // An error object, or a single queue where a list was expected.
      Result<QueueStats> one = ParseQueueObject(root);
      if (!one.ok()) return one.error();
      return Error::InvalidInput("rabbitmq: expected a list of queues, got one queue");
    }
    items = &*it;
  }
  if (!items->is_array()) return Error::InvalidInput("rabbitmq: queue list is not an array");
  std::vector<QueueStats> out;
  out.reserve(items->size());
  for (const json& q : *items) {
    Result<QueueStats> one = ParseQueueObject(q);
    if (!one.ok()) return one.error();
    out.push_back(std::move(*one));
  }
  return out;
}

std::string QueuePath(std::string_view vhost, std::string_view queue) {
  return "/api/queues/" + net::PercentEncode(vhost) + "/" + net::PercentEncode(queue);
}

std::string QueueUrl(std::string_view base_url, std::string_view vhost, std::string_view queue) {
  while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
  return std::string(base_url) + QueuePath(vhost, queue);
}

}  // namespace gpuscaler::signals
