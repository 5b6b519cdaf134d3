#include "gpuscaler/server/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <set>

#include "gpuscaler/model/text.h"

namespace gpuscaler::server {

bool ConstantTimeEquals(std::string_view secret, std::string_view candidate) {
  // Walk the candidate (its length is the caller's own business) and fold
  // every difference into one accumulator: no early exit, no branch on the
  // data. The secret is read cyclically so its length stays hidden too.
  size_t diff = secret.size() ^ candidate.size();
  if (secret.empty()) return candidate.empty();
  for (size_t i = 0; i < candidate.size(); ++i) {
    diff |= static_cast<unsigned char>(candidate[i]) ^ static_cast<unsigned char>(secret[i % secret.size()]);
  }
  // volatile: keep the compiler from turning the fold into an early exit.
  volatile size_t result = diff;
  return result == 0;
}

Router& Router::Add(std::string method, std::string path, bool prefix, bool mutating, Handler h) {
  routes_.push_back({std::move(method), std::move(path), prefix, mutating, std::move(h)});
  return *this;
}

bool Router::Authorized(const HttpRequest& request) const {
  // RFC 6750: "Bearer" is case-insensitive, then one or more spaces.
  const std::string header = request.Header("Authorization");
  const std::string_view auth = header;
  constexpr std::string_view kScheme = "Bearer";
  if (auth.size() <= kScheme.size() || !EqualsIgnoreCase(auth.substr(0, kScheme.size()), kScheme) ||
      auth[kScheme.size()] != ' ')
    return false;
  return ConstantTimeEquals(token_, Trim(auth.substr(kScheme.size())));
}

// Exact beats prefix, then the longest prefix wins.
const Router::Route* Router::MostSpecific(std::string_view path) const {
  const Route* best = nullptr;
  for (const Route& r : routes_) {
    const bool match = r.prefix ? path.substr(0, r.path.size()) == r.path : path == r.path;
    if (!match) continue;
    if (best == nullptr || (best->prefix && !r.prefix) ||
        (best->prefix && r.prefix && r.path.size() > best->path.size()))
      best = &r;
  }
  return best;
}

std::string Router::RouteFor(std::string_view path) const {
  const Route* r = MostSpecific(path);
  return r == nullptr ? "" : r->path;
}

HttpResponse Router::Handle(const HttpRequest& request) const {
  const bool head = request.method == "HEAD";
  // Every answer to HEAD, errors included, is the GET answer without its
  // body but with its length: the server must not send the body, nor
  // Content-Length: 0 for it.
  auto finish = [head](HttpResponse response) {
    if (head) {
      response.headers.emplace_back("Content-Length", std::to_string(response.body.size()));
      response.body.clear();
    }
    return response;
  };
  const std::string_view method = head ? std::string_view("GET") : std::string_view(request.method);

  const Route* best = MostSpecific(request.path);
  if (best == nullptr) return finish(HttpResponse::Error(404, "no such path: " + request.path));

  const Route* match = nullptr;
  std::set<std::string> allowed;
  for (const Route& r : routes_) {
    if (r.prefix != best->prefix || r.path != best->path) continue;
    allowed.insert(r.method);
    if (r.method == "GET") allowed.insert("HEAD");
    if (match == nullptr && r.method == method) match = &r;
  }
  if (match == nullptr) {
    HttpResponse r = HttpResponse::Error(405, request.method + " is not allowed on " + request.path);
    std::string allow;
    for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    r.headers.emplace_back("Allow", allow);
    return finish(std::move(r));
  }

  if (match->mutating) {
    if (token_.empty()) return finish(HttpResponse::Error(403, "mutating endpoints are disabled: no API token is configured"));
    if (!Authorized(request)) {
      HttpResponse r = HttpResponse::Error(401, "a valid bearer token is required");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gpuscaler\"");
      return finish(std::move(r));
    }
  }

  HttpResponse response;
  try {
    response = match->handler(request);
  } catch (const std::exception& e) {
    spdlog::error("http {} {}: handler failed: {}", request.method, request.path, e.what());
    response = HttpResponse::Error(500, "internal error");
  } catch (...) {
    spdlog::error("http {} {}: handler failed with a non-standard exception", request.method, request.path);
    response = HttpResponse::Error(500, "internal error");
  }
  return finish(std::move(response));
}

}  // namespace gpuscaler::server
