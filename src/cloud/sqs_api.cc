#include "gpuscaler/cloud/sqs_api.h"

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"

namespace gpuscaler::cloud {

std::string ReceiveMessageBody(const std::string& queue_url, int max_messages, int wait_seconds) {
  nlohmann::json j = {{"QueueUrl", queue_url}, {"MaxNumberOfMessages", max_messages}, {"WaitTimeSeconds", wait_seconds}};
  return j.dump();
}

std::string DeleteMessageBody(const std::string& queue_url, const std::string& receipt_handle) {
  return nlohmann::json{{"QueueUrl", queue_url}, {"ReceiptHandle", receipt_handle}}.dump();
}

Result<std::vector<SqsMessage>> ParseReceiveMessage(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::InvalidInput("ReceiveMessage: answer is not a JSON object");
  std::vector<SqsMessage> out;
  if (!j.contains("Messages")) return out;
  if (!j["Messages"].is_array()) return Error::InvalidInput("ReceiveMessage: Messages is not an array");
  for (const auto& m : j["Messages"]) {
    if (!m.is_object()) return Error::InvalidInput("ReceiveMessage: a message is not an object");
    SqsMessage msg;
    msg.message_id = StringAt(m, "MessageId");
    msg.receipt_handle = StringAt(m, "ReceiptHandle");
    msg.body = StringAt(m, "Body");
    msg.md5_of_body = StringAt(m, "MD5OfBody");
    if (msg.receipt_handle.empty()) return Error::InvalidInput("ReceiveMessage: a message has no ReceiptHandle");
    out.push_back(std::move(msg));
  }
  return out;
}

std::string Md5Hex(std::string_view body) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(body.data(), body.size(), md, &len, EVP_md5(), nullptr);
  return HexLower(std::string_view(reinterpret_cast<const char*>(md), len));
}

Result<Ec2Event> ParseEventBridgeEvent(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("detail-type") || !j["detail-type"].is_string()) {
    return Error::InvalidInput("EventBridge event: not a JSON object with detail-type");
  }
  Ec2Event e;
  e.detail_type = j["detail-type"];
  const nlohmann::json detail = j.contains("detail") && j["detail"].is_object() ? j["detail"] : nlohmann::json::object();
  e.instance_id = StringAt(detail, "instance-id");
  e.action = StringAt(detail, "instance-action");
  e.state = StringAt(detail, "state");
  if (j.contains("time") && j["time"].is_string()) ParseAwsTime(j["time"].get<std::string>(), &e.time);
  const bool ec2 = StringAt(j, "source") == "aws.ec2";
  if (ec2 && e.detail_type == "EC2 Spot Instance Interruption Warning") {
    e.kind = Ec2EventKind::kSpotInterruption;
  } else if (ec2 && e.detail_type == "EC2 Instance Rebalance Recommendation") {
    e.kind = Ec2EventKind::kRebalanceRecommendation;
  } else if (ec2 && e.detail_type == "EC2 Instance State-change Notification") {
    e.kind = Ec2EventKind::kStateChange;
  }
  if (e.kind != Ec2EventKind::kOther && e.instance_id.empty()) {
    return Error::InvalidInput("EventBridge event: " + e.detail_type + " without detail.instance-id");
  }
  return e;
}

}  // namespace gpuscaler::cloud
