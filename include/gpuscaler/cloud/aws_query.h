// The AWS Query wire protocol shared by EC2 and Auto Scaling: form bodies
// (`Action=…&Version=…&…`) and error answers, and how an AWS error code maps
// onto gpuscaler's error categories.
//
// Pure functions over values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// Form parameters in the order they go on the wire.
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// "k1=v1&k2=v2", every key and value URI-encoded ('$' -> %24, ' ' -> %20),
// exactly as botocore writes it.
std::string EncodeForm(const QueryParams& params);
// The inverse: also accepts '+' for a space (HTML forms). Order kept.
QueryParams DecodeForm(std::string_view body);
// The first value of `key`, or nullopt.
std::optional<std::string> FormValue(const QueryParams& params, std::string_view key);

// ISO-8601 UTC as AWS writes it: "2024-01-01T00:00:00Z".
std::string AwsTime(WallTime t);
// Accepts "2024-01-01T00:00:00Z" and "2013-03-20T13:35:55.000Z".
bool ParseAwsTime(std::string_view text, WallTime* out);

// An error answer of either shape: EC2's
// <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>,
// the Query protocol's <ErrorResponse><Error><Type/><Code/><Message/></Error>
// <RequestId/></ErrorResponse>, or a JSON protocol {"__type", "message"}.
struct AwsErrorBody {
  std::string code;     // "InsufficientInstanceCapacity"
  std::string message;
  std::string request_id;
};
std::optional<AwsErrorBody> ParseErrorBody(std::string_view body);

// The category for an AWS error code (and HTTP status, 0 when unknown):
//  capacity:  InsufficientInstanceCapacity, InsufficientCapacity,
//             UnfulfillableCapacity, SpotMaxPriceTooLow,
//             MaxSpotInstanceCountExceeded, InstanceLimitExceeded,
//             VcpuLimitExceeded, Unsupported
//  throttled: RequestLimitExceeded, Throttling, and botocore's other throttle codes
//  auth:      UnauthorizedOperation, AuthFailure, InvalidClientTokenId,
//             SignatureDoesNotMatch, AccessDenied, ExpiredToken, …
//  transient: any 5xx not named above, and ResourceContention, ServiceUnavailable
//  not found: InvalidInstanceID.NotFound and other *.NotFound and
//             *.NotFoundException codes, ParameterNotFound (SSM),
//             InvalidPlacementGroup.Unknown
//  config:    anything else (a request the caller must fix).
ErrorCategory ClassifyAwsError(std::string_view code, int http_status);

// The Error for a non-2xx answer: category from the code (or from the status
// when the body is not an AWS error), message "<action>: <Code>: <Message>"
// with the request id. Never contains request headers or credentials.
Error ErrorFromResponse(std::string_view action, int http_status, std::string_view body);

}  // namespace gpuscaler::cloud
