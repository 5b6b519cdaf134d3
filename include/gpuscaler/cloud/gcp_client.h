// GcpClient: one authorized Compute Engine v1 REST call with retries, and
// the shapes every call shares (error answers, Operation resources).
//
// Calls go to `endpoint` + path ("https://compute.googleapis.com/compute/v1/"
// + "projects/p/zones/z/instances"), with "Authorization: Bearer <token>"
// from the TokenSource. Rate limits (HTTP 429, 403 rateLimitExceeded /
// userRateLimitExceeded: kThrottled) and server errors (500, 502, 503, 504,
// no answer: kTransient) are retried with capped exponential backoff and full
// jitter from a seeded RNG; other errors come back at once, categorised by
// ClassifyGcpError. Errors carry the HTTP status, the reason and Google's
// message, never the token. Not thread-safe (one caller at a time).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/aws_client.h"
#include "gpuscaler/cloud/gcp_credentials.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kComputeEndpoint = "https://compute.googleapis.com/compute/v1/";

// The category of a Compute Engine error code or reason (an HTTP error's
// errors[].reason, an Operation's error.errors[].code), given the HTTP status
// it came with (0 for an Operation error):
//   ZONE_RESOURCE_POOL_EXHAUSTED, ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS,
//   QUOTA_EXCEEDED, quotaExceeded                          -> kCapacity
//   rateLimitExceeded, userRateLimitExceeded, RATE_LIMIT_EXCEEDED, 429 -> kThrottled
//   backendError, internalError, 500/502/503/504           -> kTransient
//   401, 403 (forbidden, insufficientPermissions, PERMISSIONS_ERROR) -> kAuth
//   404, notFound, RESOURCE_NOT_FOUND                      -> kNotFound
//   anything else (400 invalid, 409 alreadyExists, …)      -> kConfig
ErrorCategory ClassifyGcpError(std::string_view code, int http_status);
// QUOTA_EXCEEDED or quotaExceeded: a project quota, not a zone's capacity.
bool IsQuotaError(std::string_view code);

// One entry of an error list (HTTP error errors[], Operation error.errors[],
// a managed instance's lastAttempt.errors.errors[]).
struct GcpErrorItem {
  std::string code;  // Operation: "ZONE_RESOURCE_POOL_EXHAUSTED"; HTTP: the reason
  std::string message;
  std::string quota_metric;  // "NVIDIA_A100_GPUS" when the error names one
};
// error.errors[] of an Operation, or errors[] of a lastAttempt (the object
// holding "errors").
std::vector<GcpErrorItem> ParseGcpErrorItems(const nlohmann::json& holder);
// A full specific reservation: CONDITION_NOT_MET "Specified reservation
// 'NAME' does not have available resources for the request." (an
// Operation's error, a managed instance's lastAttempt). kCapacity, unlike
// other CONDITION_NOT_MET errors (kConfig).
bool IsReservationFull(const GcpErrorItem& item);
// An Error from items: the category of the first item that is not kConfig
// (capacity outranks the rest; IsReservationFull items are capacity),
// messages joined, prefixed with `what`.
Error GcpErrorFrom(std::string_view what, const std::vector<GcpErrorItem>& items, int http_status);

// The Compute Engine Operation resource (the fields gpuscaler reads).
struct GcpOperation {
  std::string name;
  std::string zone;  // short name ("us-central1-a"), from the zone URL
  std::string region;  // a regional operation's region ("us-central1"); zone then empty
  std::string
      operation_type;  // "compute.instanceGroupManagers.createInstances", "compute.instances.preempted"
  std::string status;  // PENDING, RUNNING, DONE
  std::string target_link;
  std::string insert_time;  // RFC 3339
  std::vector<GcpErrorItem> errors;
  int http_error_status = 0;

  bool done() const { return status == "DONE"; }
};
Result<GcpOperation> ParseGcpOperation(const nlohmann::json& j);

// The last path segment of a resource URL ("…/zones/us-central1-a" ->
// "us-central1-a").
std::string LastSegment(std::string_view url);

struct GcpClientOptions {
  std::string endpoint = kComputeEndpoint;  // ends with '/'
  RetryPolicy retry;
  uint64_t seed = 1;
};

class GcpClient {
 public:
  GcpClient(GcpClientOptions options, Transport& transport, TokenSource& tokens, const Clock& clock,
            SleepFn sleep);

  // `method` "GET", "POST" or "DELETE"; `path` relative to the endpoint,
  // with its query string. The parsed JSON of the 200 answer.
  Result<nlohmann::json> Call(std::string_view method, const std::string& path,
                              const std::optional<nlohmann::json>& body = std::nullopt);

  const GcpClientOptions& options() const { return options_; }
  const Clock& clock() const { return clock_; }
  void Sleep(std::chrono::milliseconds d) const { retrier_.Sleep(d); }
  int calls() const { return retrier_.calls(); }
  int retries() const { return retrier_.retries(); }

 private:
  GcpClientOptions options_;
  Transport& transport_;
  TokenSource& tokens_;
  const Clock& clock_;
  Retrier retrier_;
};

// The error of a non-200 answer: {"error": {"code", "message", "errors":
// [{"reason", "domain", "message"}], "status"}}.
Error GcpErrorFromResponse(std::string_view what, int http_status, std::string_view body);

}  // namespace gpuscaler::cloud
