// AzureClient: one authorized Azure Resource Manager call with retries, and
// the long-running operations (LROs) ARM answers mutations with.
//
// Calls go to `endpoint` + path + "?api-version=<version>" (each resource
// provider has its own version: kContainerServiceApiVersion,
// kComputeApiVersion), with "Authorization: Bearer <token>" from the
// TokenSource. HTTP 429 (kThrottled) and 500/502/503/504 or no answer
// (kTransient) are retried with capped exponential backoff and full jitter
// from a seeded RNG (retry.h), never sooner than the answer's Retry-After
// says; other errors come back at once, categorised by ClassifyAzureError.
// Errors name the method, the resource path, the HTTP status, ARM's error
// code and message; never the token.
//
// Long-running operations (Mutate): an answer of 201 or 202, or one with an
// Azure-AsyncOperation header, is followed to its end: the
// Azure-AsyncOperation URL when there is one ({"status": "InProgress" |
// "Succeeded" | "Failed" | "Canceled", "error": {code, message}}), else the
// Location URL (202 while running, then 200/204 with the result), waiting
// Retry-After between polls (else `poll_interval`), for at most
// `operation_timeout`. Polling URLs must be on the endpoint's origin (the
// token is never sent elsewhere). Not thread-safe (one caller at a time).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/gcp_credentials.h"
#include "gpuscaler/cloud/retry.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kArmEndpoint = "https://management.azure.com/";
// The stable api-versions the newest stable Azure SDKs for JavaScript send
// (@azure/arm-containerservice 25.5.0, @azure/arm-compute 25.1.1).
inline constexpr const char* kContainerServiceApiVersion = "2026-06-01";
inline constexpr const char* kComputeApiVersion = "2026-04-01";

// The category of an ARM error code (error.code, or a code among
// error.details[]) given the HTTP status it came with (0 for an LRO's
// error):
//   AllocationFailed, ZonalAllocationFailed, OverconstrainedAllocationRequest,
//   OverconstrainedZonalAllocationRequest, SkuNotAvailable, QuotaExceeded,
//   InsufficientVCPUQuota, ReachedQuotaLimit, SpotMaxPriceIsLowerThanCurrentPrice,
//   OperationNotAllowed whose message speaks of a quota      -> kCapacity
//   429, TooManyRequests, SubscriptionRequestsThrottled       -> kThrottled
//   500/502/503/504, InternalServerError, InternalOperationError,
//   409 OperationNotAllowed / AnotherOperationInProgress / Conflict -> kTransient
//   401, 403, AuthorizationFailed, InvalidAuthenticationToken*,
//   LinkedAuthorizationFailed                                  -> kAuth
//   404, ResourceNotFound, NotFound, ResourceGroupNotFound     -> kNotFound
//   anything else (400 InvalidParameter, …)                    -> kConfig
ErrorCategory ClassifyAzureError(std::string_view code, std::string_view message, int http_status);

// ARM's error body {"error": {"code", "message", "target", "details": [...]}}
// (or an LRO status's "error"), as an Error: the category of the most
// telling code (capacity outranks the rest, then the first), and the text
// "<what>: HTTP <status>: <code>: <message>" with the details' codes.
Error AzureErrorFrom(std::string_view what, int http_status, const nlohmann::json& error);

struct AzureClientOptions {
  std::string endpoint = kArmEndpoint;  // ends with '/'
  RetryPolicy retry;
  uint64_t seed = 1;
  std::chrono::seconds operation_timeout{600};
  std::chrono::milliseconds poll_interval{5000};
};

struct AzureResponse {
  int status = 0;
  HeaderList headers;
  nlohmann::json body;  // null when the answer had none
};

// Where a long-running mutation ended.
struct AzureOutcome {
  // An If-Match precondition did not hold (HTTP 412): nothing was changed;
  // read the resource again and retry.
  bool precondition_failed = false;
  // The operation reached Succeeded (false: still running at the timeout).
  bool finished = false;
  nlohmann::json resource;  // the final (or first) answer's body, if any
};

class AzureClient {
 public:
  AzureClient(AzureClientOptions options, Transport& transport, TokenSource& tokens, const Clock& clock,
              SleepFn sleep);

  // One call: `path` relative to the endpoint ("subscriptions/…"), or an
  // absolute URL on its origin (a nextLink); `query` extra query text
  // ("$expand=instanceView&"), api-version appended. The answer of a 2xx;
  // an Error for anything else (after the retries above).
  Result<AzureResponse> Call(std::string_view method, const std::string& path, std::string_view api_version,
                             const std::optional<nlohmann::json>& body = std::nullopt,
                             const HeaderList& headers = {}, std::string_view query = "");
  // Every item of a list (value[] of each page, following nextLink).
  Result<std::vector<nlohmann::json>> List(const std::string& path, std::string_view api_version,
                                           std::string_view query = "");
  // A mutation (PUT, PATCH, POST, DELETE) followed to its end, as above.
  // An LRO that ends Failed or Canceled is an Error from its error (an
  // AllocationFailed is kCapacity); 412 is an outcome, not an error.
  Result<AzureOutcome> Mutate(std::string_view method, const std::string& path, std::string_view api_version,
                              const std::optional<nlohmann::json>& body, const HeaderList& headers = {},
                              std::string_view query = "");

  const AzureClientOptions& options() const { return options_; }
  const Clock& clock() const { return clock_; }
  void Sleep(std::chrono::milliseconds d) const { retrier_.Sleep(d); }
  int calls() const { return retrier_.calls(); }
  int retries() const { return retrier_.retries(); }

 private:
  // Send with retries; a non-2xx answer is returned (not an error) when
  // `pass_status` names its status.
  Result<AzureResponse> Send(std::string_view method, const std::string& url, const std::string& what,
                             const std::optional<nlohmann::json>& body, const HeaderList& headers,
                             int pass_status);
  Result<AzureOutcome> Follow(const AzureResponse& first, const std::string& what);
  // `url` (absolute) is on the endpoint's scheme, host and port.
  bool SameOrigin(const std::string& url) const;

  AzureClientOptions options_;
  Transport& transport_;
  TokenSource& tokens_;
  const Clock& clock_;
  Retrier retrier_;
};

// The Retry-After of an answer (seconds, or an HTTP date ignored), if any.
std::optional<std::chrono::seconds> RetryAfter(const HeaderList& headers);

}  // namespace gpuscaler::cloud
