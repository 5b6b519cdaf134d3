// ApiClient: requests to the Kubernetes API server on our HTTP client
// (net/http_client.h): a bearer token re-read whenever its file changes, the
// cluster's CA, client certificates; list, get, create/update/patch and
// watch streams. Blocking; thread-safe (each call is independent, the token
// cache is guarded), so a watch thread and the control loop share one client.
//
// A non-2xx answer is not an Error here: calls return the status and body so
// callers can act on 404, 409, 410 and 429 (ApiError turns one into an Error
// when they cannot). Errors: transport failures kTransient; an unreadable
// token file kAuth; bad options kConfig.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "gpuscaler/kube/config.h"
#include "gpuscaler/status.h"

namespace gpuscaler::kube {

struct ApiResponse {
  int status = 0;
  std::string body;
  bool ok() const { return status >= 200 && status < 300; }
};

// The error for an unexpected answer, with the API's own message (the
// `message` of a Status object) and `what` as context. Categories: 401/403
// kAuth, 404 kNotFound, 429 kThrottled, 400/422 kInvalidInput, others
// (409, 410, 5xx) kTransient.
Error ApiError(const ApiResponse& response, std::string_view what);

class ApiClient {
 public:
  explicit ApiClient(ClusterConfig config, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // `path` is the URL path and query: "/api/v1/nodes?limit=500".
  Result<ApiResponse> Call(const std::string& method, const std::string& path, const std::string& body = "",
                           const std::string& content_type = "application/json");
  Result<ApiResponse> Get(const std::string& path) { return Call("GET", path); }

  // A watch (`path` carries watch=1 and resourceVersion): each complete line
  // of the stream (one JSON event) goes to `on_line` until it returns false,
  // `stop` returns true, the server ends the stream, or no byte arrives for
  // `idle_timeout`. Returns the answer's status (200 for a stream; a 410
  // with its Status body when the resourceVersion is too old).
  Result<ApiResponse> Watch(const std::string& path, const std::function<bool(std::string_view line)>& on_line,
                            const std::function<bool()>& stop, std::chrono::milliseconds idle_timeout);

  const ClusterConfig& config() const { return config_; }
  const std::string& namespace_name() const { return config_.namespace_name; }

 private:
  // The token as of now: the file is read again when its size or mtime changed.
  Result<std::string> Token();

  ClusterConfig config_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::string cached_token_;
  std::string token_stamp_;  // size and mtime of the file at the last read
};

}  // namespace gpuscaler::kube
