#include <algorithm>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"
#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {

EmulatorResponse CloudEmulator::Sqs(const EmulatorRequest& request, std::string_view op, WallTime now) {
  auto j = nlohmann::json::parse(request.body.empty() ? std::string("{}") : request.body, nullptr, false);
  if (!j.is_object()) return SqsError(400, "InvalidParameterValue", "InvalidParameterValue", "Body is not a JSON object.");
  std::string host = cloud::HeaderValue(request.headers, "Host");
  if (host.empty()) host = "localhost";
  const std::string url = "http://" + host + "/" + scenario_.account_id + "/" + scenario_.queue_name;
  auto ok = [](nlohmann::json body) -> EmulatorResponse {
    return {200, cloud::kSqsJsonContentType, {}, body.dump()};
  };
  auto queue_ok = [&]() {
    const std::string q = j.value("QueueUrl", "");
    const size_t slash = q.rfind('/');
    return slash != std::string::npos && q.substr(slash + 1) == scenario_.queue_name;
  };
  const EmulatorResponse no_queue =
      SqsError(400, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.");
  if (op == "GetQueueUrl") {
    if (j.value("QueueName", "") != scenario_.queue_name) return no_queue;
    return ok({{"QueueUrl", url}});
  }
  if (op == "ReceiveMessage") {
    if (!queue_ok()) return no_queue;
    const int max = j.value("MaxNumberOfMessages", 1);
    if (max < 1 || max > 10) {
      return SqsError(400, "InvalidParameterValue", "InvalidParameterValue",
                      "Value " + std::to_string(max) + " for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.");
    }
    const Seconds visibility(j.value("VisibilityTimeout", static_cast<int>(scenario_.visibility_timeout.count())));
    nlohmann::json messages = nlohmann::json::array();
    for (Message& m : queue_) {
      if (static_cast<int>(messages.size()) == max) break;
      if (m.visible_at > now) continue;
      m.receipt_handle = NewId("AQEB", 16) + NewId("", 16) + NewId("", 16);
      m.visible_at = now + visibility;
      messages.push_back({{"MessageId", m.id},
                          {"ReceiptHandle", m.receipt_handle},
                          {"MD5OfBody", cloud::Md5Hex(m.body)},
                          {"Body", m.body}});
    }
    if (messages.empty()) return ok(nlohmann::json::object());
    return ok({{"Messages", messages}});
  }
  if (op == "DeleteMessage") {
    if (!queue_ok()) return no_queue;
    const std::string handle = j.value("ReceiptHandle", "");
    auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Message& m) { return !handle.empty() && m.receipt_handle == handle; });
    if (it == queue_.end()) {
      return SqsError(400, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
                      "The input receipt handle \"" + handle + "\" is not a valid receipt handle.");
    }
    queue_.erase(it);
    return ok(nlohmann::json::object());
  }
  if (op == "SendMessage") {
    if (!queue_ok()) return no_queue;
    const std::string body = j.value("MessageBody", "");
    if (body.empty()) return SqsError(400, "MissingParameter", "MissingParameter", "The request must contain the parameter MessageBody.");
    Enqueue(body, now);
    return ok({{"MD5OfMessageBody", cloud::Md5Hex(body)}, {"MessageId", queue_.back().id}});
  }
  return SqsError(400, "InvalidAction", "AWS.SimpleQueueService.InvalidAction",
                  "The action " + std::string(op) + " is not valid for this endpoint.");
}

}  // namespace gpuscaler::sim
