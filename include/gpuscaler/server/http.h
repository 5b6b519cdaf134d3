// Plain HTTP request and response values for the daemon's handlers: no
// Beast or Asio here, so handlers are ordinary functions tested without
// sockets (the server in http_server.h converts to and from the wire).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscaler::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: "/api/v1/decisions?since=..."
  std::string path;    // percent-decoded path without the query
  std::map<std::string, std::string> query;  // percent-decoded; a repeated key keeps the last value
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string remote_address;

  // The first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
  // The query parameter, or `fallback`.
  std::string Param(const std::string& name, const std::string& fallback = "") const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse Text(std::string body, int status = 200);
  static HttpResponse Json(std::string body, int status = 200);
  static HttpResponse Html(std::string body);
  // {"error": message} with the status.
  static HttpResponse Error(int status, std::string_view message);
};

// Splits a request target into a decoded path and query parameters.
void ParseTarget(std::string_view target, std::string* path, std::map<std::string, std::string>* query);

// Percent-decoding ('+' is a space in query strings, not in paths).
std::string PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace gpuscaler::server
