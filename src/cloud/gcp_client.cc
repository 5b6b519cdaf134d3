#include "gpuscaler/cloud/gcp_client.h"

#include <algorithm>
#include <array>

#include "gpuscaler/model/json_fields.h"

namespace gpuscaler::cloud {
namespace {

bool In(std::string_view code, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), code) != list.end();
}

// "Quota 'NVIDIA_A100_GPUS' exceeded.  Limit: 16.0 in region us-central1."
std::string QuotaMetricFromMessage(std::string_view message) {
  const size_t start = message.find("Quota '");
  if (start == std::string_view::npos) return "";
  const size_t end = message.find('\'', start + 7);
  if (end == std::string_view::npos) return "";
  return std::string(message.substr(start + 7, end - start - 7));
}

}  // namespace

bool IsReservationFull(const GcpErrorItem& item) {
  // CONDITION_NOT_MET also covers policy constraints and reservations that
  // do not exist or are not READY; only this message says the slots ran out.
  return item.code == "CONDITION_NOT_MET" &&
         item.message.find("does not have available resources for the request") != std::string::npos;
}

bool IsQuotaError(std::string_view code) { return code == "QUOTA_EXCEEDED" || code == "quotaExceeded"; }

ErrorCategory ClassifyGcpError(std::string_view code, int http_status) {
  if (In(code, {"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"}) ||
      IsQuotaError(code))
    return ErrorCategory::kCapacity;
  if (In(code, {"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"}) || http_status == 429)
    return ErrorCategory::kThrottled;
  if (In(code, {"backendError", "internalError"}) || http_status == 500 || http_status == 502 ||
      http_status == 503 || http_status == 504)
    return ErrorCategory::kTransient;
  if (http_status == 401 || http_status == 403 ||
      In(code, {"forbidden", "insufficientPermissions", "PERMISSIONS_ERROR", "authError"}))
    return ErrorCategory::kAuth;
  if (http_status == 404 || In(code, {"notFound", "RESOURCE_NOT_FOUND"})) return ErrorCategory::kNotFound;
  return ErrorCategory::kConfig;
}

std::vector<GcpErrorItem> ParseGcpErrorItems(const nlohmann::json& holder) {
  std::vector<GcpErrorItem> out;
  for (const nlohmann::json& e : ArrayAt(holder, "errors")) {
    GcpErrorItem item;
    item.code = StringAt(e, "code");
    if (item.code.empty()) item.code = StringAt(e, "reason");
    item.message = StringAt(e, "message");
    // Newer answers carry the quota in errorDetails[].quotaInfo.
    for (const nlohmann::json& d : ArrayAt(e, "errorDetails")) {
      if (std::string m = StringAt(ObjectAt(d, "quotaInfo"), "metricName"); !m.empty()) item.quota_metric = m;
    }
    if (item.quota_metric.empty() && IsQuotaError(item.code))
      item.quota_metric = QuotaMetricFromMessage(item.message);
    out.push_back(std::move(item));
  }
  return out;
}

Error GcpErrorFrom(std::string_view what, const std::vector<GcpErrorItem>& items, int http_status) {
  std::optional<ErrorCategory> category;
  bool capacity = false;
  std::string text;
  for (const GcpErrorItem& e : items) {
    const ErrorCategory c =
        IsReservationFull(e) ? ErrorCategory::kCapacity : ClassifyGcpError(e.code, http_status);
    capacity |= c == ErrorCategory::kCapacity;
    if (!category || (*category == ErrorCategory::kConfig && c != ErrorCategory::kConfig)) category = c;
    text += (text.empty() ? "" : "; ") + e.code + (e.message.empty() ? "" : ": " + e.message);
  }
  if (capacity) category = ErrorCategory::kCapacity;
  if (!category) category = ClassifyGcpError("", http_status);
  std::string message(what);
  if (http_status != 0) message += ": HTTP " + std::to_string(http_status);
  if (!text.empty()) message += ": " + text;
  return Error(*category, message);
}

Result<GcpOperation> ParseGcpOperation(const nlohmann::json& j) {
  if (!j.is_object() || StringAt(j, "name").empty())
    return Error::InvalidInput("not a Compute Engine Operation");
  GcpOperation op;
  op.name = StringAt(j, "name");
  op.zone = LastSegment(StringAt(j, "zone"));
  op.region = LastSegment(StringAt(j, "region"));
  op.operation_type = StringAt(j, "operationType");
  op.status = StringAt(j, "status");
  op.target_link = StringAt(j, "targetLink");
  op.insert_time = StringAt(j, "insertTime");
  op.errors = ParseGcpErrorItems(ObjectAt(j, "error"));
  op.http_error_status = static_cast<int>(IntAt(j, "httpErrorStatusCode", 0));
  return op;
}

std::string LastSegment(std::string_view url) {
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  const size_t slash = url.rfind('/');
  return std::string(slash == std::string_view::npos ? url : url.substr(slash + 1));
}

Error GcpErrorFromResponse(std::string_view what, int http_status, std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json& error = ObjectAt(j, "error");
  std::vector<GcpErrorItem> items = ParseGcpErrorItems(error);
  if (items.empty()) {
    GcpErrorItem only;
    only.code = StringAt(error, "status");
    only.message = StringAt(error, "message");
    if (!only.code.empty() || !only.message.empty()) items.push_back(only);
  }
  return GcpErrorFrom(what, items, http_status);
}

GcpClient::GcpClient(GcpClientOptions options, Transport& transport, TokenSource& tokens, const Clock& clock,
                     SleepFn sleep)
    : options_(std::move(options)),
      transport_(transport),
      tokens_(tokens),
      clock_(clock),
      retrier_(options_.retry, options_.seed, std::move(sleep)) {
  if (options_.endpoint.empty()) options_.endpoint = kComputeEndpoint;
  if (options_.endpoint.back() != '/') options_.endpoint += '/';
}

Result<nlohmann::json> GcpClient::Call(std::string_view method, const std::string& path,
                                       const std::optional<nlohmann::json>& body) {
  const std::string url = options_.endpoint + path;
  // Messages name the method and path without the query (filters can be long).
  const std::string what = std::string(method) + " " + path.substr(0, path.find('?'));
  std::optional<Error> last;
  for (int attempt = 0; attempt < retrier_.max_attempts(); ++attempt) {
    retrier_.BeforeAttempt(attempt, last);
    Result<AccessToken> token = tokens_.Get(clock_.WallNow());
    if (!token) {
      if (token.error().category() == ErrorCategory::kNotFound) {
        return Error::Auth(what + ": no Google credentials found (" + token.error().message() + ")");
      }
      if (token.error().category() == ErrorCategory::kTransient) {
        last = token.error().WithContext(what);
        continue;
      }
      return token.error().WithContext(what);
    }
    TransportRequest request{std::string(method), url, {{"Authorization", "Bearer " + token->token}}, ""};
    if (body) {
      request.headers.push_back({"Content-Type", "application/json"});
      request.body = body->dump();
    }
    Result<TransportResponse> resp = transport_.Send(request);
    if (!resp) {
      last = Error::Transient(what + ": " + resp.error().message());
      continue;
    }
    if (resp->status == 200) {
      auto parsed = nlohmann::json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) return Error::Transient(what + ": the answer is not JSON");
      return parsed;
    }
    // A peer that echoes the request must not put the token in a message.
    const Error e = GcpErrorFromResponse(what, resp->status, resp->body);
    last = Error(e.category(), ScrubSecrets(e.message(), {token->token}));
    if (last->category() != ErrorCategory::kThrottled && last->category() != ErrorCategory::kTransient)
      return *last;
  }
  return last->WithContext("after " + std::to_string(std::max(1, options_.retry.max_attempts)) + " attempts");
}

}  // namespace gpuscaler::cloud
