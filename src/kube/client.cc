#include "gpuscaler/kube/client.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "gpuscaler/model/text.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/net/http_client.h"

namespace gpuscaler::kube {
namespace {

net::HttpClientOptions ClientOptions(const ClusterConfig& c, std::chrono::milliseconds timeout) {
  net::HttpClientOptions o;
  o.timeout = timeout;
  o.max_body_bytes = 256 << 20;  // a list of every pod of a large cluster
  o.ca_file = c.ca_file;
  o.ca_pem = c.ca_pem;
  o.client_cert_pem = c.client_cert_pem;
  o.client_key_pem = c.client_key_pem;
  o.insecure_skip_verify = c.insecure_skip_verify;
  return o;
}

}  // namespace

Error ApiError(const ApiResponse& response, std::string_view what) {
  std::string message;
  try {
    const nlohmann::json j = nlohmann::json::parse(response.body);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  if (message.empty()) message = response.body.substr(0, 200);
  std::string text = std::string(what) + ": HTTP " + std::to_string(response.status) + (message.empty() ? "" : ": " + message);
  switch (response.status) {
    case 401:
    case 403: return Error::Auth(std::move(text));
    case 404: return Error::NotFound(std::move(text));
    case 429: return Error::Throttled(std::move(text));
    case 400:
    case 422: return Error::InvalidInput(std::move(text));
    default: return Error::Transient(std::move(text));
  }
}

ApiClient::ApiClient(ClusterConfig config, std::chrono::milliseconds timeout)
    : config_(std::move(config)), timeout_(timeout) {
  while (!config_.server.empty() && config_.server.back() == '/') config_.server.pop_back();
}

Result<std::string> ApiClient::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.token_file.empty()) return config_.token;
  std::error_code ec;
  const auto size = std::filesystem::file_size(config_.token_file, ec);
  const auto mtime = std::filesystem::last_write_time(config_.token_file, ec);
  if (ec) return Error::Auth("token file " + config_.token_file + ": " + ec.message());
  const std::string stamp = std::to_string(size) + "/" + std::to_string(mtime.time_since_epoch().count());
  if (stamp != token_stamp_ || cached_token_.empty()) {
    Result<std::string> text = ReadConfigFile(config_.token_file);
    if (!text) return Error::Auth("token file: " + text.error().message());
    cached_token_ = Trim(*text);
    token_stamp_ = stamp;
  }
  return cached_token_;
}

Result<ApiResponse> ApiClient::Call(const std::string& method, const std::string& path, const std::string& body,
                                    const std::string& content_type) {
  Result<std::string> token = Token();
  if (!token) return token.error();
  net::HttpRequest req;
  req.method = method;
  req.url = config_.server + path;
  req.headers.emplace_back("Accept", "application/json");
  if (!token->empty()) req.headers.emplace_back("Authorization", net::BearerAuthorization(*token));
  if (!body.empty()) req.headers.emplace_back("Content-Type", content_type);
  req.body = body;
  Result<net::HttpResponse> res = net::Fetch(req, ClientOptions(config_, timeout_));
  if (!res) return res.error().WithContext(method + " " + path.substr(0, path.find('?')));
  return ApiResponse{res->status, std::move(res->body)};
}

Result<ApiResponse> ApiClient::Watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                                     const std::function<bool()>& stop, std::chrono::milliseconds idle_timeout) {
  Result<std::string> token = Token();
  if (!token) return token.error();
  net::HttpRequest req;
  req.url = config_.server + path;
  req.headers.emplace_back("Accept", "application/json");
  if (!token->empty()) req.headers.emplace_back("Authorization", net::BearerAuthorization(*token));
  net::StreamOptions stream;
  stream.idle_timeout = idle_timeout;
  stream.stop = stop;
  // Events are one JSON object per line, but chunk boundaries fall anywhere:
  // keep the tail of each piece until its newline arrives.
  std::string partial;
  bool keep_going = true;
  const std::function<bool(std::string_view)> on_body = [&](std::string_view piece) {
    partial.append(piece);
    size_t start = 0;
    for (size_t nl = partial.find('\n', start); nl != std::string::npos; nl = partial.find('\n', start)) {
      std::string_view line(partial.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && !on_line(line)) {
        keep_going = false;
        break;
      }
    }
    partial.erase(0, start);
    return keep_going;
  };
  Result<net::HttpResponse> res = net::FetchStream(req, ClientOptions(config_, timeout_), stream, on_body);
  if (!res) return res.error().WithContext("watch " + path.substr(0, path.find('?')));
  if (keep_going && res->status >= 200 && res->status < 300 && !partial.empty()) on_line(partial);
  return ApiResponse{res->status, std::move(res->body)};
}

}  // namespace gpuscaler::kube
