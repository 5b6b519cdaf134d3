// Fuzzes the AWS response parsers: every EC2 and Auto Scaling XML parser, the
// error-body parser (XML and JSON shapes) and ErrorFromResponse, the SQS
// ReceiveMessage and EventBridge event parsers (JSON), and the Query form
// codec and time parser that the responses' fields go through.
//
// Invariants: nothing throws (a malformed body is a Result error); an error
// message starts with the action and the HTTP status; an accepted timestamp
// formats and parses back to itself; DecodeForm(EncodeForm(p)) == p.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/sqs_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cloud = gpuscaler::cloud;
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  (void)cloud::ParseCreateFleet(body);
  (void)cloud::ParseTerminateInstances(body);
  (void)cloud::ParseDescribeInstances(body);
  (void)cloud::ParseInstancesSet(body);
  (void)cloud::ParseDescribeSpotPriceHistory(body);
  (void)cloud::ParseDescribeAutoScalingGroups(body);
  (void)cloud::ParseTerminateInstanceInAutoScalingGroup(body);
  (void)cloud::ParseEmptyResponse(body, "SetDesiredCapacity");
  (void)cloud::ParseReceiveMessage(body);
  (void)cloud::ParseEventBridgeEvent(body);

  const int status = size > 0 ? 400 + data[0] % 200 : 500;
  const gpuscaler::Error e = cloud::ErrorFromResponse("RunInstances", status, body);
  FUZZ_CHECK(e.message().rfind("RunInstances: HTTP " + std::to_string(status), 0) == 0, "message: %s",
             e.message().c_str());
  if (auto parsed = cloud::ParseErrorBody(body)) (void)cloud::ClassifyAwsError(parsed->code, status);

  gpuscaler::WallTime t;
  if (cloud::ParseAwsTime(body, &t)) {
    const std::string formatted = cloud::AwsTime(t);
    gpuscaler::WallTime back;
    FUZZ_CHECK(cloud::ParseAwsTime(formatted, &back), "own time format rejected: %s", formatted.c_str());
    FUZZ_CHECK(back == t, "time changed in a round trip: %s", formatted.c_str());
  }

  const cloud::QueryParams params = cloud::DecodeForm(body);
  FUZZ_CHECK(cloud::DecodeForm(cloud::EncodeForm(params)) == params, "form round trip changed %s",
             cloud::EncodeForm(params).c_str());
  return 0;
}
