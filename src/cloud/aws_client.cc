#include "gpuscaler/cloud/aws_client.h"

#include <algorithm>

#include "gpuscaler/cloud/sigv4.h"

namespace gpuscaler::cloud {

AwsClient::AwsClient(AwsClientOptions options, Transport& transport, CredentialsProvider& credentials,
                     const Clock& clock, SleepFn sleep)
    : options_(std::move(options)),
      transport_(transport),
      credentials_(credentials),
      clock_(clock),
      retrier_(options_.retry, options_.seed, std::move(sleep)) {
  while (!options_.endpoint_url.empty() && options_.endpoint_url.back() == '/') options_.endpoint_url.pop_back();
}

std::string AwsClient::Endpoint(std::string_view service) const {
  if (!options_.endpoint_url.empty()) return options_.endpoint_url;
  return "https://" + std::string(service) + "." + options_.region + ".amazonaws.com";
}

Result<std::string> AwsClient::Query(std::string_view service, const QueryParams& params) {
  const std::string action = params.empty() ? std::string("?") : params.front().second;
  return Send(service, action, {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}}, EncodeForm(params));
}

Result<std::string> AwsClient::Json(std::string_view service, std::string_view target, const std::string& json,
                                    std::string_view content_type) {
  const std::string what(target.substr(target.find('.') == std::string_view::npos ? 0 : target.find('.') + 1));
  return Send(service, what, {{"Content-Type", std::string(content_type)}, {"X-Amz-Target", std::string(target)}}, json);
}

Result<std::string> AwsClient::Send(std::string_view service, std::string_view what, HeaderList headers,
                                    const std::string& body) {
  const std::string endpoint = Endpoint(service);
  std::string host = endpoint.substr(endpoint.find("://") == std::string::npos ? 0 : endpoint.find("://") + 3);
  host = host.substr(0, host.find('/'));
  headers.insert(headers.begin(), {"Host", host});

  std::optional<Error> last;
  for (int attempt = 0; attempt < retrier_.max_attempts(); ++attempt) {
    retrier_.BeforeAttempt(attempt, last);
    const WallTime now = clock_.WallNow();
    auto creds = credentials_.Get(now);
    if (!creds.ok()) return creds.error().WithContext(std::string(what));
    SigningRequest sr;
    sr.method = "POST";
    sr.path = "/";
    sr.headers = headers;
    sr.body = body;
    SigningParams params;
    params.region = options_.region;
    params.service = std::string(service);
    params.time = now;
    if (Status s = Sign(sr, *creds, params); !s.ok()) return s.error().WithContext(std::string(what));
    auto resp = transport_.Send({"POST", endpoint + "/", sr.headers, body});
    if (!resp.ok()) {
      last = Error::Transient(std::string(what) + ": " + endpoint + ": " + resp.error().message());
      continue;
    }
    if (resp->status == 200) return std::move(resp->body);
    last = ErrorFromResponse(what, resp->status, resp->body);
    if (last->category() != ErrorCategory::kThrottled && last->category() != ErrorCategory::kTransient) return *last;
  }
  return last->WithContext("after " + std::to_string(options_.retry.max_attempts) + " attempts");
}

}  // namespace gpuscaler::cloud
