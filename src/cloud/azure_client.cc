#include "gpuscaler/cloud/azure_client.h"

#include <algorithm>
#include <cctype>

#include "gpuscaler/model/json_fields.h"

namespace gpuscaler::cloud {
namespace {

bool AzureCodeIn(std::string_view code, std::initializer_list<std::string_view> list) {
  return std::any_of(list.begin(), list.end(), [&](std::string_view c) {
    return c.size() == code.size() && std::equal(c.begin(), c.end(), code.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  });
}

bool MentionsQuota(std::string_view message) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("quota") != std::string::npos;
}

// "https://host:port" of a URL ("" when it is not absolute).
std::string ArmOrigin(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  const size_t path = url.find('/', scheme + 3);
  std::string origin(url.substr(0, path));
  std::transform(origin.begin(), origin.end(), origin.begin(), [](unsigned char c) { return std::tolower(c); });
  return origin;
}

std::string ArmPathOf(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string_view::npos ? 0 : url.find('/', scheme + 3);
  if (start == std::string_view::npos) return "/";
  return std::string(url.substr(start, url.find('?', start) - start));
}

}  // namespace

ErrorCategory ClassifyAzureError(std::string_view code, std::string_view message, int http_status) {
  if (AzureCodeIn(code, {"AllocationFailed", "ZonalAllocationFailed", "OverconstrainedAllocationRequest",
                         "OverconstrainedZonalAllocationRequest", "SkuNotAvailable", "QuotaExceeded",
                         "InsufficientVCPUQuota", "ReachedQuotaLimit", "SpotMaxPriceIsLowerThanCurrentPrice",
                         "AllocationFailedSkuNotAvailable"}) ||
      (AzureCodeIn(code, {"OperationNotAllowed"}) && MentionsQuota(message)))
    return ErrorCategory::kCapacity;
  if (http_status == 429 || AzureCodeIn(code, {"TooManyRequests", "SubscriptionRequestsThrottled"}))
    return ErrorCategory::kThrottled;
  if (http_status == 500 || http_status == 502 || http_status == 503 || http_status == 504 ||
      AzureCodeIn(code, {"InternalServerError", "InternalOperationError", "AnotherOperationInProgress"}) ||
      (http_status == 409 && AzureCodeIn(code, {"OperationNotAllowed", "Conflict", "OperationPreempted"})))
    return ErrorCategory::kTransient;
  if (http_status == 401 || http_status == 403 ||
      AzureCodeIn(code, {"AuthorizationFailed", "InvalidAuthenticationToken", "InvalidAuthenticationTokenTenant",
                         "LinkedAuthorizationFailed", "AuthenticationFailed"}))
    return ErrorCategory::kAuth;
  if (http_status == 404 || AzureCodeIn(code, {"ResourceNotFound", "NotFound", "ResourceGroupNotFound"}))
    return ErrorCategory::kNotFound;
  return ErrorCategory::kConfig;
}

Error AzureErrorFrom(std::string_view what, int http_status, const nlohmann::json& error) {
  const std::string code = StringAt(error, "code");
  const std::string message = StringAt(error, "message");
  ErrorCategory category = ClassifyAzureError(code, message, http_status);
  std::string text(what);
  if (http_status != 0) text += ": HTTP " + std::to_string(http_status);
  if (!code.empty()) text += ": " + code;
  if (!message.empty()) text += ": " + message;
  // AKS wraps the scale set's error (AllocationFailed…) in details[].
  for (const nlohmann::json& d : ArrayAt(error, "details")) {
    const std::string inner = StringAt(d, "code");
    const std::string inner_message = StringAt(d, "message");
    if (inner.empty() && inner_message.empty()) continue;
    text += " [" + inner + (inner_message.empty() ? "" : ": " + inner_message) + "]";
    if (ClassifyAzureError(inner, inner_message, 0) == ErrorCategory::kCapacity) category = ErrorCategory::kCapacity;
  }
  return Error(category, text);
}

std::optional<std::chrono::seconds> RetryAfter(const HeaderList& headers) {
  const std::string value = HeaderValue(headers, "Retry-After");
  if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::chrono::seconds(std::stol(value));
}

AzureClient::AzureClient(AzureClientOptions options, Transport& transport, TokenSource& tokens, const Clock& clock,
                         SleepFn sleep)
    : options_(std::move(options)),
      transport_(transport),
      tokens_(tokens),
      clock_(clock),
      retrier_(options_.retry, options_.seed, std::move(sleep)) {
  if (options_.endpoint.empty()) options_.endpoint = kArmEndpoint;
  if (options_.endpoint.back() != '/') options_.endpoint += '/';
}

bool AzureClient::SameOrigin(const std::string& url) const {
  const std::string origin = ArmOrigin(url);
  return !origin.empty() && origin == ArmOrigin(options_.endpoint);
}

Result<AzureResponse> AzureClient::Send(std::string_view method, const std::string& url, const std::string& what,
                                        const std::optional<nlohmann::json>& body, const HeaderList& headers,
                                        int pass_status) {
  std::optional<Error> last;
  std::chrono::seconds wait{0};
  for (int attempt = 0; attempt < retrier_.max_attempts(); ++attempt) {
    // Retry-After is a floor: the jittered backoff comes on top of it.
    if (wait.count() > 0) retrier_.Sleep(wait);
    wait = std::chrono::seconds(0);
    retrier_.BeforeAttempt(attempt, last);
    Result<AccessToken> token = tokens_.Get(clock_.WallNow());
    if (!token) {
      if (token.error().category() == ErrorCategory::kTransient) {
        last = token.error().WithContext(what);
        continue;
      }
      return token.error().WithContext(what);
    }
    TransportRequest request{std::string(method), url, {{"Authorization", "Bearer " + token->token}}, ""};
    request.headers.insert(request.headers.end(), headers.begin(), headers.end());
    if (body) {
      request.headers.push_back({"Content-Type", "application/json"});
      request.body = body->dump();
    }
    Result<TransportResponse> resp = transport_.Send(request);
    if (!resp) {
      last = Error::Transient(what + ": " + resp.error().message());
      continue;
    }
    auto parsed = nlohmann::json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
    if (resp->body.empty() || parsed.is_discarded()) parsed = nullptr;
    if ((resp->status >= 200 && resp->status < 300) || resp->status == pass_status) {
      if (!resp->body.empty() && parsed.is_null() && resp->status != 204)
        return Error::Transient(what + ": HTTP " + std::to_string(resp->status) + ": the answer is not JSON");
      return AzureResponse{resp->status, resp->headers, std::move(parsed)};
    }
    // A peer that echoes the request must not put the token in a message.
    const Error e = AzureErrorFrom(what, resp->status, ObjectAt(parsed, "error"));
    last = Error(e.category(), ScrubSecrets(e.message(), {token->token}));
    if (last->category() != ErrorCategory::kThrottled && !(resp->status >= 500 && resp->status <= 504)) return *last;
    wait = RetryAfter(resp->headers).value_or(std::chrono::seconds(0));
  }
  return last->WithContext("after " + std::to_string(retrier_.max_attempts()) + " attempts");
}

Result<AzureResponse> AzureClient::Call(std::string_view method, const std::string& path,
                                        std::string_view api_version, const std::optional<nlohmann::json>& body,
                                        const HeaderList& headers, std::string_view query) {
  std::string url = path.find("://") != std::string::npos ? path : options_.endpoint + path;
  if (path.find("://") != std::string::npos && !SameOrigin(url))
    return Error::Config(std::string(method) + " " + ArmPathOf(url) + ": not on the ARM endpoint's origin");
  const std::string what = std::string(method) + " " + ArmPathOf(url);
  if (url.find("api-version=") == std::string::npos) {
    url += (url.find('?') == std::string::npos ? "?" : "&") + std::string(query) + "api-version=" +
           std::string(api_version);
  }
  return Send(method, url, what, body, headers, 0);
}

Result<std::vector<nlohmann::json>> AzureClient::List(const std::string& path, std::string_view api_version,
                                                      std::string_view query) {
  std::vector<nlohmann::json> out;
  std::string next = path;
  for (int page = 0; !next.empty(); ++page) {
    if (page > 1000) return Error::Internal("GET " + path + ": more than 1000 pages");
    Result<AzureResponse> got = Call("GET", next, api_version, std::nullopt, {}, page == 0 ? query : "");
    if (!got) return got.error();
    for (const nlohmann::json& item : ArrayAt(got->body, "value")) out.push_back(item);
    next = StringAt(got->body, "nextLink");
  }
  return out;
}

Result<AzureOutcome> AzureClient::Mutate(std::string_view method, const std::string& path,
                                         std::string_view api_version, const std::optional<nlohmann::json>& body,
                                         const HeaderList& headers, std::string_view query) {
  const std::string what = std::string(method) + " /" + path.substr(0, path.find('?'));
  std::string url = options_.endpoint + path;
  url += (url.find('?') == std::string::npos ? "?" : "&") + std::string(query) + "api-version=" +
         std::string(api_version);
  Result<AzureResponse> first = Send(method, url, what, body, headers, 412);
  if (!first) return first.error();
  if (first->status == 412) {
    AzureOutcome o;
    o.precondition_failed = true;
    return o;
  }
  return Follow(*first, what);
}

Result<AzureOutcome> AzureClient::Follow(const AzureResponse& first, const std::string& what) {
  AzureOutcome out;
  out.resource = first.body;
  const std::string async = HeaderValue(first.headers, "Azure-AsyncOperation");
  const std::string location = HeaderValue(first.headers, "Location");
  if (async.empty() && (first.status == 200 || first.status == 204 || location.empty())) {
    out.finished = true;
    return out;
  }
  const std::string poll = async.empty() ? location : async;
  if (!SameOrigin(poll))
    return Error::Config(what + ": its operation status URL is not on the ARM endpoint's origin");
  const SteadyTime deadline = clock_.Now() + options_.operation_timeout;
  std::optional<std::chrono::seconds> after = RetryAfter(first.headers);
  while (true) {
    if (clock_.Now() >= deadline) return out;  // still running: out.finished is false
    Sleep(after ? std::chrono::duration_cast<std::chrono::milliseconds>(*after) : options_.poll_interval);
    Result<AzureResponse> status = Send("GET", poll, what + " (operation status)", std::nullopt, {}, 0);
    if (!status) {
      // The operation's own 404 or a failed LRO via Location carries its error.
      return status.error();
    }
    after = RetryAfter(status->headers);
    if (!async.empty()) {
      const std::string state = StringAt(status->body, "status");
      if (state == "Succeeded") {
        out.finished = true;
        return out;
      }
      if (state == "Failed" || state == "Canceled") {
        const nlohmann::json& error = ObjectAt(status->body, "error");
        Error e = AzureErrorFrom(what + ": operation " + state, 0, error);
        // An error without a code (a cancellation) is nothing to fix in the config.
        if (StringAt(error, "code").empty()) e = Error::Transient(e.message());
        return e;
      }
      continue;  // InProgress, or a provider-specific running state
    }
    if (status->status == 202) continue;
    out.finished = true;
    if (!status->body.is_null()) out.resource = status->body;
    return out;
  }
}

}  // namespace gpuscaler::cloud
