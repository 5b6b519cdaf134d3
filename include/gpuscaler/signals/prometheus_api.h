// Parser for Prometheus HTTP API query answers (/api/v1/query and
// /api/v1/query_range), the JSON envelope
//   {"status":"success"|"error","data":{"resultType":…,"result":…},
//    "errorType":…,"error":…,"warnings":[…],"infos":[…]}.
// Pure functions; thread-safe. Reference: docs/signals.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/signals/exposition.h"
#include "gpuscaler/status.h"

namespace gpuscaler::signals {

enum class PromResultType { kVector, kMatrix, kScalar, kString };

struct PromPoint {
  double timestamp_s = 0;  // Unix seconds, fractional
  double value = 0;        // may be NaN or +-Inf (sent as strings)
};

struct PromSeries {
  std::vector<Label> metric;  // sorted by name; may lack __name__
  std::vector<PromPoint> points;  // vector and scalar: one; matrix: in time order
};

struct PromQueryResult {
  PromResultType type = PromResultType::kVector;
  // vector/matrix: one entry per series; scalar: one entry without labels;
  // string: empty (see string_value).
  std::vector<PromSeries> series;
  std::string string_value;   // resultType "string"
  double string_timestamp_s = 0;
  std::vector<std::string> warnings;  // the API's, plus ones added here
  std::vector<std::string> infos;
};

// Parses a query answer body (whatever the HTTP status, since Prometheus
// sends its JSON envelope with 400/422/503 too).
// - status "success": the result; native-histogram series ("histogram" /
//   "histograms") are dropped with a warning.
// - status "error": an Error carrying the API's message,
//   "prometheus <errorType>: <error>", categorised by errorType: bad_data
//   kConfig (the query in the policy is wrong), timeout/canceled/unavailable
//   kTransient, execution kInvalidInput, not_found kNotFound, internal and
//   not_acceptable kInternal, a missing or unknown errorType kTransient.
// - not JSON or not this shape: kInvalidInput.
Result<PromQueryResult> ParsePromQueryResponse(std::string_view body);

// The one number a signal query yields: a scalar, or a vector with exactly
// one series. An empty vector is kNotFound ("no series": a missing signal,
// not zero); more than one series is kInvalidInput (the query should
// aggregate); a NaN value is kNotFound. Matrix and string: kInvalidInput.
Result<PromPoint> SingleValue(const PromQueryResult& result);

// "<base>/api/v1/query?query=<encoded>[&time=<unix seconds>]", the query
// percent-encoded (net::PercentEncode: space as %20); a trailing slash on
// base_url is dropped.
std::string PromQueryUrl(std::string_view base_url, std::string_view promql,
                         std::optional<int64_t> time_unix_s = std::nullopt);

// The one series a range query yields (a matrix with exactly one series),
// its points in time order without NaNs. No series: kNotFound; several:
// kInvalidInput (the query should aggregate); not a matrix: kInvalidInput.
Result<std::vector<PromPoint>> SingleRangeSeries(const PromQueryResult& result);

// "<base>/api/v1/query_range?query=<encoded>&start=<s>&end=<s>&step=<s>s",
// Unix seconds; a trailing slash on base_url is dropped.
std::string PromQueryRangeUrl(std::string_view base_url, std::string_view promql, int64_t start_unix_s,
                              int64_t end_unix_s, int64_t step_s);

}  // namespace gpuscaler::signals
