// Router: maps (method, path) to a handler, and guards mutating routes with
// a bearer token. Plain functions, no sockets: HttpServer calls Handle() for
// every request, tests call it directly.
//
//  - The most specific route wins: an exact path before a prefix, a longer
//    prefix before a shorter one, whatever the order of registration.
//  - Unknown path: 404. Known path, other method: 405 with Allow.
//  - HEAD is answered as GET without a body (Content-Length of the GET body
//    is kept in the response's headers for the server to send).
//  - A mutating route needs "Authorization: Bearer <token>": 401 with
//    WWW-Authenticate when it is absent or wrong (compared in constant
//    time); 403 when the router has no token at all (mutations disabled).
//  - A handler that throws gives a 500 with a generic message; the detail
//    is logged (spdlog error), never sent.
//
// Thread-safety: build the router first, then Handle() is const and may be
// called from any thread; the handlers must be safe for that themselves.
// In HttpServer every handler runs on the I/O thread: keep them fast (read
// published state, never wait for the cloud or a tick).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/server/http.h"

namespace gpuscaler::server {

using Handler = std::function<HttpResponse(const HttpRequest&)>;

class Router {
 public:
  // `bearer_token` empty: every mutating route answers 403.
  explicit Router(std::string bearer_token = "") : token_(std::move(bearer_token)) {}

  // Read-only routes, exact path or every path starting with `prefix`
  // (e.g. "/reports/").
  Router& Get(std::string path, Handler h) { return Add("GET", std::move(path), false, false, std::move(h)); }
  Router& GetPrefix(std::string prefix, Handler h) { return Add("GET", std::move(prefix), true, false, std::move(h)); }
  // Mutating routes (bearer token required).
  Router& Post(std::string path, Handler h) { return Add("POST", std::move(path), false, true, std::move(h)); }
  Router& Put(std::string path, Handler h) { return Add("PUT", std::move(path), false, true, std::move(h)); }
  Router& Delete(std::string path, Handler h) { return Add("DELETE", std::move(path), false, true, std::move(h)); }
  // The general form. Registering the same method and pattern twice keeps
  // the first handler.
  Router& Add(std::string method, std::string path, bool prefix, bool mutating, Handler h);

  // The response for `request`; never throws.
  HttpResponse Handle(const HttpRequest& request) const;

  // The pattern of the route that serves `path` ("/api/v1/status", or
  // "/reports/" for a prefix route), whatever the method; "" when none does.
  // A bounded label for per-route metrics (raw paths are not).
  std::string RouteFor(std::string_view path) const;

  // Whether mutating routes can be used at all.
  bool mutations_enabled() const { return !token_.empty(); }

 private:
  struct Route {
    std::string method;
    std::string path;
    bool prefix = false;
    bool mutating = false;
    Handler handler;
  };
  bool Authorized(const HttpRequest& request) const;
  const Route* MostSpecific(std::string_view path) const;

  std::string token_;
  std::vector<Route> routes_;
};

// Whether `candidate` equals `secret`, in time that depends only on the
// length of `candidate` (which the caller sent), never on the contents or
// the length of `secret`.
bool ConstantTimeEquals(std::string_view secret, std::string_view candidate);

}  // namespace gpuscaler::server
