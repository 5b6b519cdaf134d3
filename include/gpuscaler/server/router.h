// Router: maps (method, path) to a handler, and guards mutating routes with
// a bearer token. Plain functions, no sockets: the HTTP server calls
// Handle() for every request. Thread-safe once built (Handle is const);
// handlers must be thread-safe themselves.
//
//  - unknown path: 404; known path, other method: 405 with Allow;
//  - HEAD is answered as GET without a body;
//  - a mutating route needs "Authorization: Bearer <token>": 401 (with
//    WWW-Authenticate) when absent or wrong, compared in constant time;
//    403 when the router has no token at all (mutations disabled);
//  - a handler that throws gives a 500 with a generic message (the detail
//    is logged, never sent).
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

  // Exact path.
  Router& Get(std::string path, Handler h) { return Add("GET", std::move(path), false, false, std::move(h)); }
  Router& Post(std::string path, Handler h) { return Add("POST", std::move(path), false, true, std::move(h)); }
  // Every path starting with `prefix` (e.g. "/reports/").
  Router& GetPrefix(std::string prefix, Handler h) {
    return Add("GET", std::move(prefix), true, false, std::move(h));
  }
  Router& Add(std::string method, std::string path, bool prefix, bool mutating, Handler h);

  HttpResponse Handle(const HttpRequest& request) const;

 private:
  struct Route {
    std::string method;
    std::string path;
    bool prefix = false;
    bool mutating = false;
    Handler handler;
  };
  std::string token_;
  std::vector<Route> routes_;
};

// Equal strings, in time that depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace gpuscaler::server
