// SQS (the JSON protocol, awsJson1_0, that current SDKs and the aws CLI
// speak: POST /, X-Amz-Target: AmazonSQS.<Op>, Content-Type
// application/x-amz-json-1.0) for the EventBridge queue that carries EC2 spot
// interruption warnings, rebalance recommendations and state changes, and
// the parser of those events.
//
// Pure functions over values; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kSqsJsonContentType = "application/x-amz-json-1.0";
inline constexpr const char* kSqsTargetPrefix = "AmazonSQS.";

// {"QueueUrl":…,"MaxNumberOfMessages":n,"WaitTimeSeconds":w}
std::string ReceiveMessageBody(const std::string& queue_url, int max_messages, int wait_seconds);
std::string DeleteMessageBody(const std::string& queue_url, const std::string& receipt_handle);

struct SqsMessage {
  std::string message_id;
  std::string receipt_handle;
  std::string body;
  std::string md5_of_body;  // hex MD5 of body
};
// {"Messages":[…]} or {} (no messages).
Result<std::vector<SqsMessage>> ParseReceiveMessage(std::string_view json);

// Hex MD5 of `body`, as SQS sends in MD5OfBody.
std::string Md5Hex(std::string_view body);

enum class Ec2EventKind { kSpotInterruption, kRebalanceRecommendation, kStateChange, kOther };

struct Ec2Event {
  Ec2EventKind kind = Ec2EventKind::kOther;
  std::string detail_type;  // "EC2 Spot Instance Interruption Warning"
  std::string instance_id;
  WallTime time{};          // the event's "time"
  std::string action;       // interruption: "terminate" | "stop" | "hibernate"
  std::string state;        // state change: "running", "terminated", …
};
// One EventBridge event (an SQS message body). kInvalidInput when not JSON
// or without detail-type; other sources parse as kOther.
Result<Ec2Event> ParseEventBridgeEvent(std::string_view json);

}  // namespace gpuscaler::cloud
