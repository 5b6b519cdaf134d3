#include "gpuscaler/net/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/fixture_http_server.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"

namespace gpuscaler::net {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::FixtureHttpServer;
using testing::FixtureRequest;
using testing::FixtureResponse;

FixtureResponse Echo(const FixtureRequest& req) {
  FixtureResponse res;
  res.body = req.method + " " + req.target + " body=" + req.body;
  res.headers = {{"X-Seen-Authorization", req.Header("Authorization")},
                 {"X-Seen-Host", req.Header("Host")},
                 {"X-Seen-Content-Type", req.Header("Content-Type")}};
  return res;
}

FixtureResponse Hang(const FixtureRequest&) {
  FixtureResponse res;
  res.hang = true;
  return res;
}

// A port nothing listens on: a server's, after it stopped.
uint16_t ClosedPort() {
  FixtureHttpServer server(Echo);
  const uint16_t port = server.port();
  server.Stop();
  return port;
}

TEST(Base64Encode, MatchesTheRfc4648TestVectors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}, {"\xff\xfe", "//4="}};
  for (const auto& [in, want] : cases) EXPECT_EQ(Base64Encode(in), want) << in;
}

TEST(AuthorizationHeaders, AreBasicAndBearerValues) {
  EXPECT_EQ(BasicAuthorization("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(BearerAuthorization("abc.def"), "Bearer abc.def");
}

TEST(SetHeader, ReplacesAHeaderOfTheSameNameWhateverItsCase) {
  HttpRequest req;
  SetHeader(req, "Accept", "text/plain");
  SetHeader(req, "accept", "application/json");
  ASSERT_EQ(req.headers.size(), 1u);
  EXPECT_EQ(req.headers[0].second, "application/json");
}

TEST(Fetch, SendsMethodHeadersAndBodyAndReturnsTheAnswer) {
  FixtureHttpServer server(Echo);
  HttpRequest req;
  req.method = "POST";
  req.url = server.url() + "/api/exchanges/%2F/amq.default/publish?x=1";
  req.headers = {{"Authorization", BasicAuthorization("guest", "guest")}, {"Content-Type", "application/json"}};
  req.body = R"({"a":1})";
  Result<HttpResponse> res = Fetch(req);
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, R"(POST /api/exchanges/%2F/amq.default/publish?x=1 body={"a":1})");
  EXPECT_EQ(res->Header("x-seen-authorization"), "Basic Z3Vlc3Q6Z3Vlc3Q=");
  EXPECT_EQ(res->Header("X-Seen-Host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(res->Header("X-SEEN-CONTENT-TYPE"), "application/json");
  EXPECT_EQ(res->Header("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(res->Header("No-Such-Header"), "");
}

TEST(Fetch, ReturnsANon2xxAnswerAsAResponseNotAnError) {
  FixtureHttpServer server([](const FixtureRequest&) {
    FixtureResponse res;
    res.status = 401;
    res.body = R"({"error":"not_authorized","reason":"Login failed"})";
    return res;
  });
  Result<HttpResponse> res = Fetch({.url = server.url() + "/api/overview"});
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->body, R"({"error":"not_authorized","reason":"Login failed"})");
}

TEST(Fetch, ConnectionRefusedIsTransientAndNamesThePeerAndStep) {
  const uint16_t port = ClosedPort();
  Result<HttpResponse> res = Fetch({.url = "http://127.0.0.1:" + std::to_string(port) + "/metrics"});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(res.error().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << res.error().message();
  EXPECT_NE(res.error().message().find("connect"), std::string::npos) << res.error().message();
}

TEST(Fetch, APeerThatNeverAnswersFailsAtTheDeadline) {
  FixtureHttpServer server(Hang);
  const auto start = steady_clock::now();
  Result<HttpResponse> res = Fetch({.url = server.url() + "/"}, {.timeout = milliseconds(300)});
  const auto elapsed = steady_clock::now() - start;
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(res.error().message().find("read: timed out"), std::string::npos) << res.error().message();
  EXPECT_GE(elapsed, milliseconds(290));
  EXPECT_LT(elapsed, milliseconds(2000));
}

TEST(Fetch, ABodyOverTheLimitIsRejected) {
  FixtureHttpServer server([](const FixtureRequest&) { return FixtureResponse{.body = std::string(1000, 'x')}; });
  Result<HttpResponse> res = Fetch({.url = server.url() + "/"}, {.max_body_bytes = 100});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kInvalidInput);
  EXPECT_NE(res.error().message().find("limit of 100 bytes"), std::string::npos) << res.error().message();

  Result<HttpResponse> fits = Fetch({.url = server.url() + "/"}, {.max_body_bytes = 1000});
  ASSERT_TRUE(fits.ok()) << fits.error().ToString();
  EXPECT_EQ(fits->body.size(), 1000u);
}

TEST(Fetch, APeerThatClosesMidBodyIsTransient) {
  FixtureHttpServer server([](const FixtureRequest&) {
    return FixtureResponse{.body = "short", .content_length = 1000};
  });
  Result<HttpResponse> res = Fetch({.url = server.url() + "/"});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(res.error().message().find("read"), std::string::npos) << res.error().message();
}

TEST(Fetch, ABadUrlIsAConfigError) {
  Result<HttpResponse> res = Fetch({.url = "gopher://x"});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kConfig);
}

TEST(Fetch, RefusesHeadersThatWouldSplitTheRequestWithoutEchoingTheValue) {
  FixtureHttpServer server(Echo);
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"X-Token", "s3cret\r\nX-Evil: 1"},
                                                        {"Bad Name", "v"},
                                                        {"X-Colon:", "v"}}) {
    SCOPED_TRACE(name);
    Result<HttpResponse> res = Fetch({.url = server.url() + "/", .headers = {{name, value}}});
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().category(), ErrorCategory::kConfig);
    EXPECT_EQ(res.error().message().find("s3cret"), std::string::npos) << res.error().message();
  }
  EXPECT_EQ(server.requests(), 0);
}

TEST(Fetch, AHeadRequestReadsHeadersOnly) {
  FixtureHttpServer server([](const FixtureRequest&) { return FixtureResponse{.body = "not sent for HEAD"}; });
  Result<HttpResponse> res = Fetch({.method = "HEAD", .url = server.url() + "/"}, {.timeout = milliseconds(2000)});
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->Header("Content-Length"), "17");
  EXPECT_EQ(res->body, "");
}

TEST(Fetch, IsSafeToCallFromSeveralThreadsAtOnce) {
  FixtureHttpServer server(Echo);
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        Result<HttpResponse> res = Fetch({.url = server.url() + "/t" + std::to_string(t)});
        if (res.ok() && res->body == "GET /t" + std::to_string(t) + " body=") ++ok[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(ok[t], 5) << "thread " << t;
}

TEST(FetchAll, RunsRequestsConcurrentlyEachWithItsOwnDeadlineAndKeepsTheirOrder) {
  FixtureHttpServer fast(Echo);
  FixtureHttpServer slow(Hang);
  const uint16_t closed = ClosedPort();
  const std::vector<HttpRequest> requests = {
      {.url = slow.url() + "/1"},
      {.url = fast.url() + "/2"},
      {.url = slow.url() + "/3"},
      {.url = "http://127.0.0.1:" + std::to_string(closed) + "/4"},
      {.url = "not a url"},
      {.url = fast.url() + "/6"},
  };
  const auto start = steady_clock::now();
  std::vector<Result<HttpResponse>> results = FetchAll(requests, {.timeout = milliseconds(400)});
  const auto elapsed = steady_clock::now() - start;
  ASSERT_EQ(results.size(), requests.size());
  EXPECT_FALSE(results[0].ok());
  ASSERT_TRUE(results[1].ok()) << results[1].error().ToString();
  EXPECT_EQ(results[1]->body, "GET /2 body=");
  EXPECT_FALSE(results[2].ok());
  ASSERT_FALSE(results[3].ok());
  EXPECT_EQ(results[3].error().category(), ErrorCategory::kTransient);
  ASSERT_FALSE(results[4].ok());
  EXPECT_EQ(results[4].error().category(), ErrorCategory::kConfig);
  ASSERT_TRUE(results[5].ok()) << results[5].error().ToString();
  EXPECT_EQ(results[5]->body, "GET /6 body=");
  // Two hanging requests of 400 ms each, run side by side.
  EXPECT_LT(elapsed, milliseconds(750));
}

TEST(FetchAll, OfNothingIsNothing) { EXPECT_TRUE(FetchAll({}).empty()); }

class HttpsFetch : public ::testing::Test {
 protected:
  HttpsFetch()
      : pki_(testing::MakeTestPki({"localhost"}, {"127.0.0.1"})),
        server_(Echo, testing::FixtureTls{pki_.server_cert_pem, pki_.server_key_pem}),
        ca_file_(dir_.Write("ca.pem", pki_.ca_cert_pem)) {}

  testing::TempDir dir_;
  testing::TestPki pki_;
  FixtureHttpServer server_;
  std::string ca_file_;
};

TEST_F(HttpsFetch, TrustsAServerSignedByTheGivenCa) {
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    Result<HttpResponse> res =
        Fetch({.url = "https://" + host + ":" + std::to_string(server_.port()) + "/metrics"}, {.ca_file = ca_file_});
    ASSERT_TRUE(res.ok()) << res.error().ToString();
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body, "GET /metrics body=");
  }
}

TEST_F(HttpsFetch, RejectsAServerTheSystemStoreDoesNotTrust) {
  Result<HttpResponse> res = Fetch({.url = server_.url() + "/metrics"});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kTransient);
  const std::string& m = res.error().message();
  EXPECT_NE(m.find("127.0.0.1:" + std::to_string(server_.port()) + ": TLS handshake"), std::string::npos) << m;
  EXPECT_NE(m.find("certificate"), std::string::npos) << m;
}

TEST_F(HttpsFetch, RejectsACertificateForAnotherName) {
  testing::TestPki other = testing::MakeTestPki({"other.example"}, {});
  FixtureHttpServer server(Echo, testing::FixtureTls{other.server_cert_pem, other.server_key_pem});
  const std::string ca = dir_.Write("other-ca.pem", other.ca_cert_pem);
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    Result<HttpResponse> res =
        Fetch({.url = "https://" + host + ":" + std::to_string(server.port()) + "/"}, {.ca_file = ca});
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().category(), ErrorCategory::kTransient);
    EXPECT_NE(res.error().message().find("mismatch"), std::string::npos) << res.error().message();
  }
}

TEST_F(HttpsFetch, SkipsVerificationOnlyWhenAskedTo) {
  Result<HttpResponse> res = Fetch({.url = server_.url() + "/"}, {.insecure_skip_verify = true});
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpsFetch, AnUnreadableCaFileIsAConfigError) {
  Result<HttpResponse> res = Fetch({.url = server_.url() + "/"}, {.ca_file = (dir_.path() / "absent.pem").string()});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(res.error().message().find("absent.pem"), std::string::npos);
}

TEST_F(HttpsFetch, PlainHttpToATlsPortFailsWithoutHanging) {
  Result<HttpResponse> res =
      Fetch({.url = "http://127.0.0.1:" + std::to_string(server_.port()) + "/"}, {.timeout = milliseconds(2000)});
  EXPECT_FALSE(res.ok());
}

}  // namespace
// A streamed answer in pieces that do not line up with anything (a watch's
// lines split across chunks).
TEST(FetchStream, HandsEveryPieceOfAChunkedBodyToTheCallbackInOrder) {
  const std::vector<std::string> pieces = {"{\"a\":1}\n{\"b\"", ":2}\n", "{\"c\":3}\n"};
  FixtureHttpServer server([&](const FixtureRequest&) {
    FixtureResponse r;
    auto next = std::make_shared<size_t>(0);
    r.stream = [&pieces, next](std::string* piece) {
      if (*next >= pieces.size()) return false;
      *piece = pieces[(*next)++];
      return true;
    };
    return r;
  });
  std::string got;
  HttpRequest req;
  req.url = server.url() + "/watch";
  Result<HttpResponse> res = FetchStream(req, {}, {}, [&](std::string_view piece) {
    got.append(piece);
    return true;
  });
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->Header("Transfer-Encoding"), "chunked");
  EXPECT_TRUE(res->body.empty());
  EXPECT_EQ(got, pieces[0] + pieces[1] + pieces[2]);
}

TEST(FetchStream, ReadsAnErrorAnswerWholeWithoutCallingTheCallback) {
  FixtureHttpServer server([](const FixtureRequest&) {
    FixtureResponse r;
    r.status = 410;
    r.body = "{\"code\":410}";
    return r;
  });
  int calls = 0;
  HttpRequest req;
  req.url = server.url() + "/watch";
  Result<HttpResponse> res = FetchStream(req, {}, {}, [&](std::string_view) {
    ++calls;
    return true;
  });
  ASSERT_TRUE(res.ok()) << res.error().ToString();
  EXPECT_EQ(res->status, 410);
  EXPECT_EQ(res->body, "{\"code\":410}");
  EXPECT_EQ(calls, 0);
}

TEST(FetchStream, StopsWhenTheCallbackSaysSoOrTheStopFunctionFires) {
  // A stream that never ends on its own.
  FixtureHttpServer server([](const FixtureRequest&) {
    FixtureResponse r;
    r.stream = [](std::string* piece) {
      std::this_thread::sleep_for(milliseconds(5));
      *piece = "x";
      return true;
    };
    return r;
  });
  HttpRequest req;
  req.url = server.url() + "/watch";
  int pieces = 0;
  Result<HttpResponse> first = FetchStream(req, {}, {}, [&](std::string_view) { return ++pieces < 3; });
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(pieces, 3);

  std::atomic<int> seen{0};
  StreamOptions stream;
  stream.stop = [&] { return seen.load() >= 2; };
  const auto started = steady_clock::now();
  Result<HttpResponse> second = FetchStream(req, {}, stream, [&](std::string_view) {
    ++seen;
    return true;
  });
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_GE(seen.load(), 2);
  EXPECT_LT(steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(FetchStream, ASilentPeerFailsAfterTheIdleTimeout) {
  FixtureHttpServer server([](const FixtureRequest&) {
    FixtureResponse r;
    r.stream = [](std::string*) {
      std::this_thread::sleep_for(milliseconds(20));
      return true;  // never sends anything
    };
    return r;
  });
  HttpRequest req;
  req.url = server.url() + "/watch";
  StreamOptions stream;
  stream.idle_timeout = milliseconds(300);
  Result<HttpResponse> res = FetchStream(req, {}, stream, [](std::string_view) { return true; });
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(res.error().message().find("no data for 300 ms"), std::string::npos) << res.error().message();
}

}  // namespace gpuscaler::net
