// Router and request helpers, without sockets: routing (404, 405 + Allow,
// HEAD), bearer-token guard (401, 403), throwing handlers, target parsing,
// and the constant-time comparison.
#include "gpuscaler/server/router.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuscaler::server {
namespace {

Router MakeRouter(std::string token) {
  Router r(std::move(token));
  r.Get("/healthz", [](const HttpRequest&) { return HttpResponse::Text("ok\n"); });
  r.Get("/api/v1/status", [](const HttpRequest& req) { return HttpResponse::Json("{\"who\":\"" + req.Param("who") + "\"}"); });
  r.Post("/api/v1/pause", [](const HttpRequest&) { return HttpResponse::Json(R"({"paused":true})"); });
  r.Get("/api/v1/pause", [](const HttpRequest&) { return HttpResponse::Json(R"({"paused":false})"); });
  r.GetPrefix("/reports/", [](const HttpRequest& req) { return HttpResponse::Text("report " + req.path); });
  r.Get("/reports/special", [](const HttpRequest&) { return HttpResponse::Text("special"); });
  r.GetPrefix("/reports/deep/", [](const HttpRequest&) { return HttpResponse::Text("deep"); });
  r.Get("/boom", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("secret detail /etc/x"); });
  r.Get("/boom2", [](const HttpRequest&) -> HttpResponse { throw 42; });
  return r;
}

HttpRequest Req(std::string method, std::string target, std::string authorization = "") {
  HttpRequest r = HttpRequest::Make(std::move(method), std::move(target));
  if (!authorization.empty()) r.headers.emplace_back("authorization", std::move(authorization));
  return r;
}

struct Case {
  std::string name;
  std::string token;  // the router's
  HttpRequest request;
  int want_status;
  std::string want_body;  // substring; "" means "empty body"
  std::vector<std::pair<std::string, std::string>> want_headers;
};

TEST(Router, RoutesGuardsAndErrorsTable) {
  const std::string tok = "s3cr3t-t0ken";
  const std::vector<Case> cases = {
      {"exact GET", tok, Req("GET", "/healthz"), 200, "ok\n", {}},
      {"query parameters decoded", tok, Req("GET", "/api/v1/status?who=a%20b+c"), 200, R"({"who":"a b c"})", {}},
      {"unknown path is 404", tok, Req("GET", "/nope"), 404, "no such path: /nope", {}},
      {"path match is exact", tok, Req("GET", "/healthz/"), 404, "no such path", {}},
      {"wrong method is 405 with Allow", tok, Req("DELETE", "/healthz"), 405, "not allowed", {{"Allow", "GET, HEAD"}}},
      {"Allow lists every method of the path", tok, Req("PUT", "/api/v1/pause"), 405, "",
       {{"Allow", "GET, HEAD, POST"}}},
      {"HEAD is GET without a body", tok, Req("HEAD", "/healthz"), 200, "", {{"Content-Length", "3"}}},
      // Without a body, with the length the GET's error body has.
      {"HEAD on an unknown path is 404", tok, Req("HEAD", "/api/v1/nothing"), 404, "", {{"Content-Length", "41"}}},
      {"prefix route", tok, Req("GET", "/reports/cost.csv"), 200, "report /reports/cost.csv", {}},
      {"exact beats prefix", tok, Req("GET", "/reports/special"), 200, "special", {}},
      {"longer prefix beats shorter", tok, Req("GET", "/reports/deep/x"), 200, "deep", {}},
      {"percent-encoded path is decoded before matching", tok, Req("GET", "/health%7A"), 200, "ok\n", {}},
      {"mutation with the token", tok, Req("POST", "/api/v1/pause", "Bearer " + tok), 200, R"({"paused":true})", {}},
      {"scheme is case-insensitive", tok, Req("POST", "/api/v1/pause", "bearer " + tok), 200, "paused", {}},
      {"mutation without a token is 401", tok, Req("POST", "/api/v1/pause"), 401, "bearer token",
       {{"WWW-Authenticate", "Bearer realm=\"gpuscaler\""}}},
      {"wrong token is 401", tok, Req("POST", "/api/v1/pause", "Bearer s3cr3t-t0keN"), 401, "bearer token",
       {{"WWW-Authenticate", "Bearer realm=\"gpuscaler\""}}},
      {"token prefix is 401", tok, Req("POST", "/api/v1/pause", "Bearer s3cr3t"), 401, "", {}},
      {"token with extra bytes is 401", tok, Req("POST", "/api/v1/pause", "Bearer " + tok + "x"), 401, "", {}},
      {"other scheme is 401", tok, Req("POST", "/api/v1/pause", "Basic " + tok), 401, "", {}},
      {"scheme without space is 401", tok, Req("POST", "/api/v1/pause", "Bearer" + tok), 401, "", {}},
      {"no token configured is 403", "", Req("POST", "/api/v1/pause", "Bearer anything"), 403, "disabled", {}},
      {"no token configured, empty bearer is 403", "", Req("POST", "/api/v1/pause", "Bearer "), 403, "disabled", {}},
      {"GET stays open without a token", "", Req("GET", "/api/v1/pause"), 200, "false", {}},
      {"throwing handler is a generic 500", tok, Req("GET", "/boom"), 500, R"({"error":"internal error"})", {}},
      {"non-standard throw is a 500", tok, Req("GET", "/boom2"), 500, "internal error", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Router router = MakeRouter(c.token);
    const HttpResponse res = router.Handle(c.request);
    EXPECT_EQ(res.status, c.want_status);
    if (c.want_body.empty()) {
      if (c.request.method == "HEAD") {
        EXPECT_EQ(res.body, "");
      }
    } else {
      EXPECT_NE(res.body.find(c.want_body), std::string::npos) << res.body;
    }
    for (const auto& [k, v] : c.want_headers) EXPECT_EQ(res.Header(k), v) << k;
    EXPECT_EQ(res.body.find("secret detail"), std::string::npos);
    if (res.status >= 400 && c.request.method != "HEAD") {
      EXPECT_EQ(res.content_type, "application/json");
      EXPECT_TRUE(nlohmann::json::parse(res.body, nullptr, false).contains("error")) << res.body;
    }
  }
}

TEST(Router, ErrorBodyWithInvalidUtf8DoesNotThrow) {
  const Router router = MakeRouter("t");
  const HttpResponse res = router.Handle(Req("GET", "/%FF%FE"));
  EXPECT_EQ(res.status, 404);
  EXPECT_FALSE(nlohmann::json::parse(res.body, nullptr, false).is_discarded()) << res.body;
}

TEST(Router, RouteForGivesTheBoundedPattern) {
  const Router router = MakeRouter("t");
  EXPECT_EQ(router.RouteFor("/healthz"), "/healthz");
  EXPECT_EQ(router.RouteFor("/reports/2026-11.csv"), "/reports/");
  EXPECT_EQ(router.RouteFor("/reports/deep/a/b"), "/reports/deep/");
  EXPECT_EQ(router.RouteFor("/reports/special"), "/reports/special");
  EXPECT_EQ(router.RouteFor("/api/v1/pause"), "/api/v1/pause");
  EXPECT_EQ(router.RouteFor("/../etc/passwd"), "");
}

TEST(Router, FirstRegistrationOfARouteWins) {
  Router r;
  r.Get("/x", [](const HttpRequest&) { return HttpResponse::Text("first"); });
  r.Get("/x", [](const HttpRequest&) { return HttpResponse::Text("second"); });
  EXPECT_EQ(r.Handle(Req("GET", "/x")).body, "first");
  EXPECT_FALSE(r.mutations_enabled());
  EXPECT_TRUE(Router("t").mutations_enabled());
}

TEST(ConstantTimeEquals, EqualUnequalAndDifferentLengths) {
  struct C {
    const char* name;
    std::string secret, candidate;
    bool want;
  };
  const std::vector<C> cases = {
      {"equal", "abcdef", "abcdef", true},
      {"last byte differs", "abcdef", "abcdeg", false},
      {"first byte differs", "abcdef", "xbcdef", false},
      {"candidate shorter", "abcdef", "abc", false},
      {"candidate longer", "abc", "abcabc", false},  // cyclic read of the secret must not fake a match
      {"candidate empty", "abc", "", false},
      {"both empty", "", "", true},
      {"secret empty", "", "abc", false},
      {"high bit bytes", "\xff\x80", "\xff\x80", true},
      {"high bit differs", "\xff\x80", "\x7f\x80", false},
      {"embedded NUL", std::string("a\0b", 3), std::string("a\0c", 3), false},
  };
  for (const C& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ConstantTimeEquals(c.secret, c.candidate), c.want);
  }
}

TEST(HttpRequest, HeaderLookupIsCaseInsensitiveAndFirstWins) {
  HttpRequest r;
  r.headers = {{"Content-Type", "a"}, {"content-type", "b"}, {"X-Y", "z"}};
  EXPECT_EQ(r.Header("CONTENT-TYPE"), "a");
  EXPECT_EQ(r.Header("x-y"), "z");
  EXPECT_EQ(r.Header("missing"), "");
}

TEST(HttpRequest, TargetParsing) {
  struct C {
    std::string target, path;
    std::map<std::string, std::string> query;
  };
  const std::vector<C> cases = {
      {"/", "/", {}},
      {"/a%2Fb?x=1&y=two+words&z", "/a/b", {{"x", "1"}, {"y", "two words"}, {"z", ""}}},
      {"/p+q?k=%3D%26&k=last", "/p+q", {{"k", "last"}}},
      {"/bad%zzpercent%4", "/bad%zzpercent%4", {}},
      {"/x?a=1#frag", "/x", {{"a", "1"}}},
      {"/x?&&a=1&", "/x", {{"a", "1"}}},
  };
  for (const C& c : cases) {
    SCOPED_TRACE(c.target);
    const HttpRequest r = HttpRequest::Make("GET", c.target);
    EXPECT_EQ(r.path, c.path);
    EXPECT_EQ(r.query, c.query);
    EXPECT_EQ(r.target, c.target);
  }
}

TEST(HttpResponse, Helpers) {
  EXPECT_EQ(HttpResponse::Text("t").content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(HttpResponse::Json("{}", 201).status, 201);
  EXPECT_EQ(HttpResponse::Html("<p>").content_type, "text/html; charset=utf-8");
  const HttpResponse e = HttpResponse::Error(400, "bad \"since\"\n");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.content_type, "application/json");
  EXPECT_EQ(nlohmann::json::parse(e.body), (nlohmann::json{{"error", "bad \"since\"\n"}}));
}

}  // namespace
}  // namespace gpuscaler::server
