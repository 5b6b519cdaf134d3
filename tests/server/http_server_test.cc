// HttpServer over real sockets on 127.0.0.1, port 0: keep-alive round trips,
// the server's limits (431, 413, slowloris, idle timeout, connection cap),
// a throwing handler, and a graceful Stop. The server runs on its own
// io_context thread, as in the daemon; the clients are plain blocking POSIX
// sockets with receive timeouts, so every wait is bounded.
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/server/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace gpuscaler::server {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

long ElapsedMs(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

Router TestRouter() {
  Router r("tok");
  r.Get("/hello", [](const HttpRequest&) { return HttpResponse::Text("hello world"); });
  r.Get("/boom", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("kaboom"); });
  r.Add("POST", "/echo", false, false, [](const HttpRequest& req) { return HttpResponse::Text(req.body); });
  r.Get("/whoami", [](const HttpRequest& req) {
    return HttpResponse::Text(req.remote_address + " " + req.Param("q") + " " + req.Header("x-test"));
  });
  r.Get("/nocontent", [](const HttpRequest&) { return HttpResponse::Text("ignored", 204); });
  return r;
}

// The server on its own I/O thread. Start() runs before io.run, Stop() and
// open_connections() on the I/O thread, as the contract wants.
class RunningServer {
 public:
  explicit RunningServer(HttpServerOptions options, Router router = TestRouter())
      : server_(io_, WithEphemeralPort(std::move(options)), std::move(router)) {
    Status s = server_.Start();
    if (!s.ok()) throw std::runtime_error(s.error().message());
    done_ = std::async(std::launch::async, [this] { io_.run(); });
  }
  ~RunningServer() {
    if (done_.valid() && done_.wait_for(milliseconds(0)) != std::future_status::ready) {
      boost::asio::post(io_, [this] {
        server_.Stop();
        io_.stop();
      });
      done_.wait();
    }
  }

  uint16_t port() const { return server_.port(); }

  template <typename F>
  auto OnIo(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return result.get();
  }
  void Stop() { OnIo([this] { server_.Stop(); }); }
  size_t open_connections() { return OnIo([this] { return server_.open_connections(); }); }
  // A client sees its socket closed slightly before the connection's
  // coroutine has unwound (its completion takes a hop or two through the
  // I/O queue): go round the queue until the count settles, boundedly.
  bool ConnectionsSettleAt(size_t n) {
    for (int i = 0; i < 1000; ++i) {
      if (open_connections() == n) return true;
    }
    return false;
  }
  // Whether io_context::run returned by itself within `limit`.
  bool RunReturnsWithin(milliseconds limit) { return done_.wait_for(limit) == std::future_status::ready; }

 private:
  static HttpServerOptions WithEphemeralPort(HttpServerOptions o) {
    o.host = "127.0.0.1";
    o.port = 0;
    return o;
  }
  boost::asio::io_context io_{1};
  HttpServer server_;
  std::future<void> done_;
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// A blocking HTTP/1.1 client on a raw socket, with a receive timeout so no
// read can hang a test.
class Client {
 public:
  explicit Client(uint16_t port, milliseconds timeout = milliseconds(5000)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{};
    tv.tv_sec = timeout.count() / 1000;
    tv.tv_usec = (timeout.count() % 1000) * 1000;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response (no body for HEAD, 1xx, 204). nullopt on timeout or close.
  std::optional<Response> Read(bool head = false) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    Response r;
    std::istringstream lines(buf_.substr(0, end));
    std::string line;
    std::getline(lines, line);
    if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) return std::nullopt;
    r.status = std::stoi(line.substr(9, 3));
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    buf_.erase(0, end + 4);
    size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    if (head || r.status < 200 || r.status == 204) length = 0;
    while (buf_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    return r;
  }

  // Waits up to `limit` for the server to close the connection (EOF or
  // reset); data that arrives meanwhile is dropped.
  bool WaitClosed(milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      const long left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      char tmp[4096];
      const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    }
  }

 private:
  bool Fill() {
    char tmp[4096];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

constexpr const char* kGetHello = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";

TEST(HttpServer, GetRoundTripsOnOneKeptAliveConnection) {
  RunningServer server({});
  ASSERT_NE(server.port(), 0);
  Client c(server.port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(c.Send(kGetHello));
    std::optional<Response> r = c.Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello world");
    EXPECT_EQ(r->headers["content-type"], "text/plain; charset=utf-8");
    EXPECT_EQ(r->headers["cache-control"], "no-store");
    EXPECT_NE(r->headers["connection"], "close");
  }
  EXPECT_EQ(server.open_connections(), 1u);

  // HEAD: the GET's length, no body (the next response parses cleanly).
  ASSERT_TRUE(c.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<Response> head = c.Read(/*head=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers["content-length"], "11");

  // Two pipelined requests in one write, answered in order; query and
  // headers reach the handler.
  ASSERT_TRUE(c.Send("GET /whoami?q=a%20b HTTP/1.1\r\nHost: t\r\nX-Test: yes\r\n\r\n" + std::string(kGetHello)));
  std::optional<Response> who = c.Read();
  std::optional<Response> hello = c.Read();
  ASSERT_TRUE(who && hello);
  EXPECT_EQ(who->body, "127.0.0.1 a b yes");
  EXPECT_EQ(hello->body, "hello world");

  // 204 goes without a body even if the handler set one.
  ASSERT_TRUE(c.Send("GET /nocontent HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kGetHello)));
  std::optional<Response> none = c.Read();
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 204);
  std::optional<Response> after = c.Read();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->body, "hello world");

  // "Connection: close" is honoured.
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  std::optional<Response> last = c.Read();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->headers["connection"], "close");
  EXPECT_TRUE(c.WaitClosed(milliseconds(2000)));
}

TEST(HttpServer, RoutingErrorsComeBackAsJson) {
  RunningServer server({});
  Client c(server.port());
  ASSERT_TRUE(c.Send("GET /missing HTTP/1.1\r\nHost: t\r\n\r\nDELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<Response> missing = c.Read();
  std::optional<Response> wrong_method = c.Read();
  ASSERT_TRUE(missing && wrong_method);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->headers["content-type"], "application/json");
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(wrong_method->headers["allow"], "GET, HEAD");
}

TEST(HttpServer, OversizedHeadersGet431AndTheConnectionCloses) {
  RunningServer server({});  // default 8 KiB
  Client c(server.port());
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(16 * 1024, 'a') + "\r\n\r\n"));
  std::optional<Response> r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 431);
  EXPECT_NE(r->body.find("too large"), std::string::npos);
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(c.WaitClosed(milliseconds(2000)));

  // Just under the limit is fine.
  Client ok(server.port());
  ASSERT_TRUE(ok.Send("GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(7 * 1024, 'a') + "\r\n\r\n"));
  std::optional<Response> r2 = ok.Read();
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->status, 200);
}

TEST(HttpServer, OversizedBodiesGet413DeclaredOrChunked) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  RunningServer server(o);
  {
    Client c(server.port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4096\r\n\r\n" + std::string(4096, 'x')));
    std::optional<Response> r = c.Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(c.WaitClosed(milliseconds(2000)));
  }
  {
    Client c(server.port());
    std::string chunked = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 4; ++i) chunked += "200\r\n" + std::string(512, 'y') + "\r\n";
    chunked += "0\r\n\r\n";
    ASSERT_TRUE(c.Send(chunked));
    std::optional<Response> r = c.Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 413);
  }
  {
    Client c(server.port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n" + std::string(1024, 'z')));
    std::optional<Response> r = c.Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::string(1024, 'z'));
  }
  {
    // curl's way for bodies: wait for 100 Continue, then send.
    Client c(server.port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    std::optional<Response> cont = c.Read();
    ASSERT_TRUE(cont.has_value());
    EXPECT_EQ(cont->status, 100);
    ASSERT_TRUE(c.Send("hello"));
    std::optional<Response> r = c.Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, "hello");
  }
}

TEST(HttpServer, MalformedRequestGets400) {
  RunningServer server({});
  Client c(server.port());
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nBad Header Without Colon\r\n\r\n"));
  std::optional<Response> r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(c.WaitClosed(milliseconds(2000)));
}

TEST(HttpServer, SlowlorisIsCutOffAfterReadTimeoutWhileOthersAreServed) {
  HttpServerOptions o;
  o.read_timeout = milliseconds(300);
  RunningServer server(o);

  std::promise<void> first_byte_sent;
  std::atomic<long> closed_after_ms{-1};
  std::atomic<int> bytes_sent{0};
  std::thread slow([&] {
    Client c(server.port());
    const std::string request = "GET /hello HTTP/1.1\r\nHost: t\r\nX-Padding: " + std::string(100, 'p') + "\r\n\r\n";
    const auto start = Clock::now();
    for (size_t i = 0; i < request.size(); ++i) {
      if (!c.Send(request.substr(i, 1))) break;
      ++bytes_sent;
      if (i == 0) first_byte_sent.set_value();
      // One byte per 200 ms; the wait ends early if the server hangs up.
      if (c.WaitClosed(milliseconds(200))) {
        closed_after_ms = ElapsedMs(start);
        return;
      }
    }
  });
  first_byte_sent.get_future().wait();

  // Meanwhile another client is answered at once.
  const auto start = Clock::now();
  Client fast(server.port());
  ASSERT_TRUE(fast.Send(kGetHello));
  std::optional<Response> r = fast.Read();
  const long fast_ms = ElapsedMs(start);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(fast_ms, 280) << "a trickling client must not delay others (its timeout is 300 ms)";
  EXPECT_EQ(closed_after_ms.load(), -1) << "the fast client was served before the slow one was cut off";

  slow.join();
  EXPECT_GE(closed_after_ms.load(), 250);
  EXPECT_LT(closed_after_ms.load(), 1500);
  EXPECT_LT(bytes_sent.load(), 10) << "the slow client got nowhere near a full request";
  // The fast client's connection is still fine.
  ASSERT_TRUE(fast.Send(kGetHello));
  ASSERT_TRUE(fast.Read().has_value());
}

TEST(HttpServer, IdleKeptAliveConnectionIsClosedAfterIdleTimeout) {
  HttpServerOptions o;
  o.idle_timeout = milliseconds(300);
  RunningServer server(o);
  Client c(server.port());
  ASSERT_TRUE(c.Send(kGetHello));
  ASSERT_TRUE(c.Read().has_value());
  const auto start = Clock::now();
  EXPECT_TRUE(c.WaitClosed(milliseconds(3000)));
  EXPECT_GE(ElapsedMs(start), 250);
  EXPECT_TRUE(server.ConnectionsSettleAt(0));
}

TEST(HttpServer, ConnectionsBeyondTheCapGet503) {
  HttpServerOptions o;
  o.max_connections = 2;
  RunningServer server(o);
  Client a(server.port()), b(server.port());
  for (Client* c : {&a, &b}) {
    ASSERT_TRUE(c->Send(kGetHello));
    ASSERT_TRUE(c->Read().has_value());
  }
  Client over(server.port());
  std::optional<Response> r = over.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers["retry-after"], "1");
  EXPECT_TRUE(over.WaitClosed(milliseconds(2000)));
  // The two inside are unaffected.
  ASSERT_TRUE(a.Send(kGetHello));
  ASSERT_TRUE(a.Read().has_value());
}

TEST(HttpServer, ThrowingHandlerIsA500AndTheConnectionStaysUsable) {
  RunningServer server({});
  Client c(server.port());
  ASSERT_TRUE(c.Send("GET /boom HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<Response> r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, R"({"error":"internal error"})");
  ASSERT_TRUE(c.Send(kGetHello));
  std::optional<Response> ok = c.Read();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServer, StopClosesIdleConnectionsFinishesInFlightOnesAndReleasesTheLoop) {
  HttpServerOptions o;
  o.stop_grace = milliseconds(3000);
  RunningServer server(o);
  Client idle(server.port());
  ASSERT_TRUE(idle.Send(kGetHello));
  ASSERT_TRUE(idle.Read().has_value());
  // A request in flight: headers read (the server said 100 Continue), body not yet sent.
  Client busy(server.port());
  ASSERT_TRUE(busy.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  std::optional<Response> cont = busy.Read();
  ASSERT_TRUE(cont.has_value());
  ASSERT_EQ(cont->status, 100);

  server.Stop();
  EXPECT_TRUE(idle.WaitClosed(milliseconds(1000)));
  Client refused(server.port());
  EXPECT_FALSE(refused.connected()) << "the listener is closed at once";

  ASSERT_TRUE(busy.Send("hello"));
  std::optional<Response> r = busy.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(busy.WaitClosed(milliseconds(1000)));
  // Nothing of the server is left on the io_context: run() returns by itself.
  EXPECT_TRUE(server.RunReturnsWithin(milliseconds(2000)));
}

TEST(HttpServer, StopClosesWhatIsStillBusyAfterTheGracePeriod) {
  HttpServerOptions o;
  o.stop_grace = milliseconds(200);
  o.read_timeout = milliseconds(10000);
  RunningServer server(o);
  Client busy(server.port());
  ASSERT_TRUE(busy.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_TRUE(busy.Read().has_value());
  const auto start = Clock::now();
  server.Stop();
  EXPECT_TRUE(busy.WaitClosed(milliseconds(3000)));
  EXPECT_GE(ElapsedMs(start), 150);
  EXPECT_LT(ElapsedMs(start), 3000);
  EXPECT_TRUE(server.RunReturnsWithin(milliseconds(2000)));
}

TEST(HttpServer, StartFailsWithConfigErrorWhenTheAddressIsTakenOrInvalid) {
  RunningServer first({});
  boost::asio::io_context io;
  HttpServerOptions taken;
  taken.port = first.port();
  HttpServer second(io, taken, TestRouter());
  Status s = second.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(s.error().message().find(std::to_string(first.port())), std::string::npos);

  HttpServerOptions bad;
  bad.host = "not an address";
  HttpServer third(io, bad, TestRouter());
  Status s3 = third.Start();
  ASSERT_FALSE(s3.ok());
  EXPECT_EQ(s3.error().category(), ErrorCategory::kConfig);
}

TEST(HttpServer, OnResponseFeedsPerRouteRequestCounters) {
  MetricsRegistry reg;
  Family& requests = reg.Counter("gpuscaler_http_requests_total", "HTTP requests by route and status code.",
                                 {"path", "code"});
  HttpServerOptions o;
  o.on_response = [&requests](const HttpExchange& x) {
    requests.With({x.route.empty() ? "other" : std::string(x.route), std::to_string(x.status)}).Inc();
  };
  RunningServer server(o);
  Client c(server.port());
  ASSERT_TRUE(c.Send(std::string(kGetHello) + kGetHello + "GET /no/such/thing HTTP/1.1\r\nHost: t\r\n\r\n" +
                     "GET /boom HTTP/1.1\r\nHost: t\r\n\r\n"));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c.Read().has_value());
  // The callback ran on the I/O thread before each response was written.
  EXPECT_DOUBLE_EQ(requests.With({"/hello", "200"}).value(), 2);
  EXPECT_DOUBLE_EQ(requests.With({"other", "404"}).value(), 1);
  EXPECT_DOUBLE_EQ(requests.With({"/boom", "500"}).value(), 1);
}

TEST(HttpServer, AccessLogIsDebugAndNeverHasTheAuthorizationHeader) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
  {
    RunningServer server({});
    Client c(server.port());
    ASSERT_TRUE(c.Send("GET /hello?token=qu3ry-s3cret HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sup3r-s3cret\r\n\r\n"));
    ASSERT_TRUE(c.Read().has_value());
    // A decoded newline must not forge a log line.
    ASSERT_TRUE(c.Send("GET /x%0Afake-line HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(c.Read().has_value());
  }
  spdlog::set_default_logger(previous);
  const std::string text = log.str();
  EXPECT_NE(text.find("GET /hello 200"), std::string::npos) << text;
  EXPECT_EQ(text.find("sup3r-s3cret"), std::string::npos) << text;
  EXPECT_EQ(text.find("qu3ry-s3cret"), std::string::npos) << text;
  EXPECT_NE(text.find("GET /x%0Afake-line 404"), std::string::npos) << text;
}

// A handler that blocks (a cost report reading the disk) must not hold up
// quick requests on other connections when the server runs it on its pool;
// on the I/O thread (no slow_request) it does, which is why the daemon
// routes reports there.
TEST(HttpServer, SlowRequestsRunOnTheirPoolSoQuickOnesAreNotHeldUp) {
  for (const bool offload : {true, false}) {
    SCOPED_TRACE(offload ? "slow_request set" : "no slow_request");
    std::promise<std::thread::id> entered;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    Router r = TestRouter();
    r.Get("/slow", [&entered, released](const HttpRequest&) {
      entered.set_value(std::this_thread::get_id());
      released.wait();
      return HttpResponse::Text("slow done");
    });
    HttpServerOptions o;
    if (offload) o.slow_request = [](const HttpRequest& req) { return req.path == "/slow"; };
    RunningServer server(o, std::move(r));
    const std::thread::id io_thread = server.OnIo([] { return std::this_thread::get_id(); });

    Client slow(server.port());
    ASSERT_TRUE(slow.Send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
    const std::thread::id handler_thread = entered.get_future().get();
    // Bounded wait: with the handler on the I/O thread nothing answers until release.
    Client quick(server.port(), milliseconds(offload ? 5000 : 300));
    ASSERT_TRUE(quick.Send(kGetHello));
    std::optional<Response> hello = quick.Read();
    release.set_value();
    if (offload) {
      EXPECT_NE(handler_thread, io_thread);
      ASSERT_TRUE(hello.has_value());
      EXPECT_EQ(hello->body, "hello world");
    } else {
      EXPECT_EQ(handler_thread, io_thread);
      EXPECT_FALSE(hello.has_value());
    }
    std::optional<Response> done = slow.Read();
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->status, 200);
    EXPECT_EQ(done->body, "slow done");
    // The connection stays usable after a pooled request.
    ASSERT_TRUE(slow.Send(kGetHello));
    ASSERT_TRUE(slow.Read().has_value());
  }
}

}  // namespace
}  // namespace gpuscaler::server
