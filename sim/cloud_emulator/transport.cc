#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::sim {

Result<cloud::TransportResponse> EmulatorTransport::Send(const cloud::TransportRequest& request) {
  // "http://host:port/path?query" -> host, "/path?query"
  std::string_view url = request.url;
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  const size_t slash = url.find('/');
  const std::string host(url.substr(0, slash));
  EmulatorRequest r;
  r.method = request.method;
  r.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  r.headers = request.headers;
  if (cloud::HeaderValue(r.headers, "Host").empty()) r.headers.insert(r.headers.begin(), {"Host", host});
  r.body = request.body;
  EmulatorResponse resp = emulator_.Handle(r);
  cloud::TransportResponse out;
  out.status = resp.status;
  out.headers = resp.headers;
  out.headers.emplace_back("Content-Type", resp.content_type);
  out.body = std::move(resp.body);
  return out;
}

}  // namespace gpuscaler::sim
