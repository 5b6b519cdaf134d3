// A small HTTP/1.1 client for the signal sources (Prometheus, RabbitMQ
// management API, DCGM exporters): http and https, one request per
// connection, a deadline per request covering resolve, connect, TLS
// handshake, write and read, and a limit on the response body.
//
// Plain values only: no Boost in this header (the coroutine form is in
// net/async_http.h). Thread-safe: every call is independent (its own
// io_context, socket and TLS context); call it from any thread.
//
// Errors (never thrown):
//  - a URL that cannot be parsed, an unsupported scheme, credentials in the
//    URL, an unreadable ca_file: kConfig;
//  - name resolution, connect, TLS handshake or verification, write, read
//    failures and the deadline: kTransient, the message naming host:port and
//    the step that failed ("127.0.0.1:9090: connect: Connection refused");
//  - a response body over max_body_bytes: kInvalidInput.
// A non-2xx status is NOT an error here: the response is returned and the
// caller maps it (signals::HttpStatusError). Messages never contain header
// values or bodies of the request, so credentials stay out of them.
// Redirects are not followed. Reference: docs/signals.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::net {

struct HttpRequest {
  std::string method = "GET";
  std::string url{};  // http://host[:port]/path?query or https://...
  // Sent as given, after the defaults (Host, User-Agent, Content-Length,
  // Connection: close); a header given here with the same name replaces the
  // default.
  std::vector<std::pair<std::string, std::string>> headers{};
  std::string body{};
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in wire order
  std::string body;

  // The first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

struct HttpClientOptions {
  // Whole-request deadline: resolve + connect + handshake + write + read.
  std::chrono::milliseconds timeout{5000};
  size_t max_body_bytes = 16 << 20;
  // https: PEM file of trusted CAs; empty: the system's default CA store.
  std::string ca_file{};
  // https: skip certificate and host name verification (tests, labs only).
  bool insecure_skip_verify = false;
  // https: trusted CAs as PEM text, in addition to ca_file (a kubeconfig's
  // certificate-authority-data); a bad PEM is kConfig.
  std::string ca_pem{};
  // https: a client certificate (chain) and its private key, PEM text, for
  // servers that authenticate clients by certificate (kubeconfig
  // client-certificate-data / client-key-data). Both or neither.
  std::string client_cert_pem{};
  std::string client_key_pem{};
};

// A response read as it arrives (a Kubernetes watch): the body of a 2xx
// answer is handed to `on_body` piece by piece, chunked or not.
struct StreamOptions {
  // Longest silence between two pieces of the body: kTransient when it
  // passes (a peer that went away without closing). HttpClientOptions::
  // timeout covers everything up to the end of the response headers.
  std::chrono::milliseconds idle_timeout{60000};
  // Polled about every 100 ms while the request runs; returning true ends it
  // early as a success (a shutdown from another thread). May be empty.
  std::function<bool()> stop{};
};

// Sends `request` and streams the answer. A 2xx body goes to on_body (which
// may return false to stop reading: a success); the returned response then
// has the status and headers and an empty body. Any other status is read
// whole (up to max_body_bytes) into the returned body, on_body not called.
// The end of the body, a stop and on_body's false are successes; errors as
// Fetch(), plus kTransient when idle_timeout passes. Blocking, on its own
// io_context; thread-safe like Fetch.
Result<HttpResponse> FetchStream(const HttpRequest& request, const HttpClientOptions& options,
                                 const StreamOptions& stream, const std::function<bool(std::string_view)>& on_body);

// Blocking: runs the request on its own io_context and returns when it is
// answered or fails.
Result<HttpResponse> Fetch(const HttpRequest& request, const HttpClientOptions& options = {});

// Runs all requests concurrently on one io_context (one thread), each with
// its own deadline; returns one result per request, in order.
std::vector<Result<HttpResponse>> FetchAll(const std::vector<HttpRequest>& requests,
                                           const HttpClientOptions& options = {});

// "Basic base64(user:password)" for an Authorization header.
std::string BasicAuthorization(std::string_view username, std::string_view password);
// "Bearer token" for an Authorization header.
std::string BearerAuthorization(std::string_view token);
// Standard base64 with padding (RFC 4648).
std::string Base64Encode(std::string_view bytes);
// Base64url without padding (RFC 4648 §5), as JWTs use it.
std::string Base64UrlEncode(std::string_view bytes);

// Adds or replaces (case-insensitive name) a header of the request.
void SetHeader(HttpRequest& request, std::string_view name, std::string value);

}  // namespace gpuscaler::net
