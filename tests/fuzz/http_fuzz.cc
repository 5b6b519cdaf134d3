// Fuzzes request handling without sockets: the request target parser
// (path and query, percent-decoding) and Router::Handle with a route table
// shaped like the daemon's (exact and prefix routes, nested prefixes,
// bearer-guarded mutations, a handler that throws). Beast's own wire parser
// is only reachable through a socket and is not fuzzed here.
//
// Input: "METHOD TARGET\n", then "Name: value" header lines up to an empty
// line, then the body.
//
// Invariants: Handle never throws and answers 1xx..5xx; 404 exactly when no
// route serves the path; 405 carries Allow; HEAD has no body; a mutation
// runs only with the right token; JSON answers (errors included) are valid
// JSON even for paths that are not UTF-8; a target without '%', '+' or '?'
// decodes to itself; ConstantTimeEquals is plain equality.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/server/http.h"
#include "gpuscaler/server/router.h"

namespace {

using gpuscaler::server::HttpRequest;
using gpuscaler::server::HttpResponse;
using gpuscaler::server::Router;

constexpr std::string_view kToken = "s3cret-token";

// Echoes what the router handed over, as the daemon's JSON handlers do with
// query parameters (dump with replacement: paths need not be UTF-8).
HttpResponse Echo(const HttpRequest& req) {
  nlohmann::json j = {{"path", req.path}, {"query", req.query}, {"limit", req.Param("limit", "100")}};
  return HttpResponse::Json(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

const Router& DaemonLikeRouter() {
  static const Router* router = [] {
    spdlog::set_level(spdlog::level::off);  // the throwing route logs each time
    auto* r = new Router(std::string(kToken));
    r->Get("/healthz", [](const HttpRequest&) { return HttpResponse::Text("ok\n"); });
    r->Get("/metrics", [](const HttpRequest&) { return HttpResponse::Text("up 1\n"); });
    r->Get("/", [](const HttpRequest&) { return HttpResponse::Html("<html></html>"); });
    r->Get("/api/v1/status", Echo);
    r->Get("/api/v1/decisions", Echo);
    r->Post("/api/v1/pause", Echo);
    r->Post("/api/v1/resume", Echo);
    r->Put("/api/v1/policy", Echo);
    r->Delete("/api/v1/policy", Echo);
    r->Get("/api/v1/policy", Echo);
    r->GetPrefix("/reports", Echo);
    r->GetPrefix("/reports/archive/", Echo);
    r->Get("/api/v1/throw", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
    return r;
  }();
  return *router;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t eol = in.find('\n');
  const std::string_view request_line = in.substr(0, eol);
  const size_t space = request_line.find(' ');
  if (space == std::string_view::npos) return 0;

  HttpRequest req = HttpRequest::Make(std::string(request_line.substr(0, space)),
                                      std::string(request_line.substr(space + 1)));
  size_t pos = eol == std::string_view::npos ? in.size() : eol + 1;
  while (pos < in.size()) {
    size_t end = in.find('\n', pos);
    if (end == std::string_view::npos) end = in.size();
    const std::string_view line = in.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    req.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  if (pos < in.size()) req.body = std::string(in.substr(pos));

  if (req.target.find_first_of("%+?") == std::string::npos)
    FUZZ_CHECK(req.path == req.target, "plain target %s decoded to %s", req.target.c_str(), req.path.c_str());

  const Router& router = DaemonLikeRouter();
  const HttpResponse resp = router.Handle(req);
  FUZZ_CHECK(resp.status >= 100 && resp.status <= 599, "status %d", resp.status);
  const bool routed = !router.RouteFor(req.path).empty();
  FUZZ_CHECK(routed == (resp.status != 404), "route for %s but status %d", req.path.c_str(), resp.status);
  if (resp.status == 405) FUZZ_CHECK(!resp.Header("Allow").empty(), "405 without Allow");
  if (req.method == "HEAD") FUZZ_CHECK(resp.body.empty(), "HEAD with a body");
  const bool mutating = req.method == "POST" || req.method == "PUT" || req.method == "DELETE";
  if (mutating && resp.status == 200) {
    const std::string auth = req.Header("Authorization");
    FUZZ_CHECK(auth.find(kToken) != std::string::npos, "mutation without the token: %s", req.target.c_str());
  }
  if (resp.content_type.rfind("application/json", 0) == 0 && req.method != "HEAD")
    FUZZ_CHECK(nlohmann::json::accept(resp.body), "invalid JSON answer: %s", resp.body.c_str());

  // The body as two halves: the constant-time compare against plain equality.
  const std::string_view a = std::string_view(req.body).substr(0, req.body.size() / 2);
  const std::string_view b = std::string_view(req.body).substr(req.body.size() / 2);
  FUZZ_CHECK(gpuscaler::server::ConstantTimeEquals(a, b) == (a == b), "ConstantTimeEquals");
  FUZZ_CHECK(gpuscaler::server::ConstantTimeEquals(a, a), "ConstantTimeEquals(x, x)");
  return 0;
}
