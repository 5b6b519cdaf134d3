// Plain HTTP request and response values for the daemon's handlers: no
// Beast or Asio here, so handlers are ordinary functions tested without
// sockets (HttpServer in http_server.h converts to and from the wire).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscaler::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ... (as sent; methods are case-sensitive)
  std::string target;  // as sent: "/api/v1/decisions?since=..."
  std::string path;    // percent-decoded path without the query: "/api/v1/decisions"
  std::map<std::string, std::string> query;  // percent-decoded ('+' is a space); a repeated key keeps the last value
  std::vector<std::pair<std::string, std::string>> headers;  // in arrival order
  std::string body;
  std::string remote_address;  // "127.0.0.1"; "" when unknown

  // The first header of that name (names compare case-insensitively), or "".
  std::string Header(std::string_view name) const;
  // The query parameter, or `fallback`.
  std::string Param(const std::string& name, const std::string& fallback = "") const;

  // A request as the server would build it from `method` and `target`
  // (path and query parsed), for tests and tools.
  static HttpRequest Make(std::string method, std::string target, std::string body = "");
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra headers (Allow, WWW-Authenticate, Location, ...). The server sets
  // Content-Length, Connection, Date-less Server and Cache-Control itself;
  // a handler's Cache-Control replaces the default "no-store". CR and LF in
  // values are dropped on the wire.
  std::vector<std::pair<std::string, std::string>> headers{};

  // text/plain; charset=utf-8
  static HttpResponse Text(std::string body, int status = 200);
  // application/json (the body is sent as is: the caller serialises)
  static HttpResponse Json(std::string body, int status = 200);
  // text/html; charset=utf-8
  static HttpResponse Html(std::string body, int status = 200);
  // {"error": "<message>"} as application/json with that status. Invalid
  // UTF-8 in the message is replaced, never thrown on.
  static HttpResponse Error(int status, std::string_view message);

  // The value of the first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

// Splits a request target into a decoded path and query parameters.
void ParseTarget(std::string_view target, std::string* path, std::map<std::string, std::string>* query);

// Percent-decoding; a '%' not followed by two hex digits is kept as is.
// `plus_is_space`: '+' means a space (query strings, not paths).
std::string PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace gpuscaler::server
