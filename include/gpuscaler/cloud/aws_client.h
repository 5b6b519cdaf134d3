// AwsClient: one signed AWS API call with retries. Resolves the endpoint
// (https://<service>.<region>.amazonaws.com, or one override for every
// service, as `aws --endpoint-url` does), signs with SigV4 using the
// credentials provider, sends through the Transport, and retries throttles
// (kThrottled), 5xx and transport failures (kTransient) with capped
// exponential backoff and full jitter from a seeded RNG. Other errors come
// back at once, categorised (aws_query.h).
//
// Errors never contain credentials, signatures or request headers. Not
// thread-safe (one caller at a time; the RNG and counters are members).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/retry.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

struct AwsClientOptions {
  std::string region = "us-east-1";
  // "http://127.0.0.1:4566": every service at this URL. Empty: AWS's endpoints.
  std::string endpoint_url;
  RetryPolicy retry;
  uint64_t seed = 1;  // jitter
};

class AwsClient {
 public:
  AwsClient(AwsClientOptions options, Transport& transport, CredentialsProvider& credentials, const Clock& clock,
            SleepFn sleep);

  // A Query-protocol call (EC2, Auto Scaling): POST the form, return the body
  // of the 200 answer. `params` must start with Action.
  Result<std::string> Query(std::string_view service, const QueryParams& params);
  // A JSON-protocol call (SQS awsJson1_0, SSM awsJson1_1): POST `json` with
  // X-Amz-Target `target` and `content_type`.
  Result<std::string> Json(std::string_view service, std::string_view target, const std::string& json,
                           std::string_view content_type = "application/x-amz-json-1.0");

  // "https://ec2.us-east-1.amazonaws.com" or the override (no trailing '/').
  std::string Endpoint(std::string_view service) const;
  const AwsClientOptions& options() const { return options_; }
  // Waits `d` through the client's sleep (no sleep given: returns at once),
  // between the polls of a caller that waits for the cloud.
  void Sleep(std::chrono::milliseconds d) const { retrier_.Sleep(d); }
  int calls() const { return retrier_.calls(); }
  int retries() const { return retrier_.retries(); }

 private:
  Result<std::string> Send(std::string_view service, std::string_view what, HeaderList headers,
                           const std::string& body);

  AwsClientOptions options_;
  Transport& transport_;
  CredentialsProvider& credentials_;
  const Clock& clock_;
  Retrier retrier_;
};

}  // namespace gpuscaler::cloud
