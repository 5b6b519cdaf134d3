// The only Beast translation unit of the server (Beast headers are slow to
// compile: keep them here).
#include "gpuscaler/server/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>

#include "gpuscaler/model/text.h"

namespace gpuscaler::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// After an error response (431, 413, 400) the client may still be sending:
// closing with unread data makes the kernel send RST, which can destroy the
// response before the client reads it. So shut down our side, then read and
// drop what still comes, briefly and boundedly.
constexpr std::chrono::milliseconds kLingerTime{500};
constexpr size_t kLingerBytes = 1 << 20;
// A connection over max_connections gets this long to take its 503.
constexpr std::chrono::milliseconds kRefuseWriteTime{1000};
// Pause before accepting again after an accept error (out of descriptors):
// retrying at once would spin the I/O thread.
constexpr std::chrono::milliseconds kAcceptBackoff{100};

std::string Sanitized(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c != '\r' && c != '\n') out += c;
  }
  return out;
}

// Once per thread (the nice value is per thread on Linux; a thread the
// handler starts inherits it).
void LowerThisThreadsPriority(int nice) {
  thread_local bool done = false;
  if (done || nice <= 0) return;
  done = true;
  const id_t tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  if (::setpriority(PRIO_PROCESS, tid, std::min(19, current + nice)) != 0)
    spdlog::debug("http: cannot lower the priority of a slow-request thread: {}", std::strerror(errno));
}

// Headers the server owns: a handler's copy would contradict the framing.
bool IsFramingHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "Connection");
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  struct Conn {
    beast::tcp_stream* tcp;  // the connection's TCP layer (under TLS when serving HTTPS)
    bool busy = false;       // between the first byte of a request and the end of its response
  };

  Impl(asio::io_context& io_context, HttpServerOptions o, Router r)
      : io(io_context), options(std::move(o)), router(std::move(r)), acceptor(io_context), grace_timer(io_context) {
    if (options.slow_request) slow_pool = std::make_unique<asio::thread_pool>(std::max<size_t>(1, options.slow_handler_threads));
  }

  asio::io_context& io;
  HttpServerOptions options;
  Router router;
  tcp::acceptor acceptor;
  asio::steady_timer grace_timer;
  uint16_t bound_port = 0;
  bool started = false;
  bool stopped = false;
  std::set<Conn*> conns;
  // Set by Start when options.tls_certificate_pem is: every connection is
  // TLS.
  std::unique_ptr<asio::ssl::context> tls;
  // Runs the handlers of slow requests. Its work holds no reference to the
  // Impl (sessions do, while they wait), so the Impl is never destroyed on
  // one of its threads; ~HttpServer joins it.
  std::unique_ptr<asio::thread_pool> slow_pool;

  static void LogIfThrew(std::exception_ptr e, const char* what) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("http: {} failed: {}", what, ex.what());
    } catch (...) {
      spdlog::error("http: {} failed", what);
    }
  }

  asio::awaitable<void> Accept() {
    auto self = shared_from_this();
    while (!stopped) {
      error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (stopped) break;
      if (ec) {
        if (ec == asio::error::operation_aborted) break;
        spdlog::warn("http: accept failed: {}", ec.message());
        asio::steady_timer backoff(io, kAcceptBackoff);
        co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      // Responses go out in one write; Nagle would only hold back the tail
      // of a large one waiting for the client's delayed ACK.
      socket.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(io, Session(self, std::move(socket)),
                     [](std::exception_ptr e) { LogIfThrew(e, "connection"); });
    }
  }

  // The TLS context of options.tls_*_pem (TLS 1.2 and newer); kConfig when
  // the certificate or key is not usable PEM or they do not match.
  Status MakeTlsContext() {
    auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                     asio::ssl::context::single_dh_use);
    error_code ec;
    ctx->use_certificate_chain(asio::buffer(options.tls_certificate_pem), ec);
    if (ec) return Error::Config("TLS certificate: " + ec.message());
    ctx->use_private_key(asio::buffer(options.tls_private_key_pem), asio::ssl::context::pem, ec);
    if (ec) return Error::Config("TLS private key: " + ec.message());
    tls = std::move(ctx);
    return Status();
  }

  // Forgets a connection; the last one gone after Stop ends the grace timer
  // so that the server holds no more work on the io_context.
  void Forget(Conn* c) {
    conns.erase(c);
    if (stopped && conns.empty()) grace_timer.cancel();
  }

  void CloseAll() {
    error_code ec;
    for (Conn* c : conns) c->tcp->socket().close(ec);
  }

  static asio::awaitable<void> Session(std::shared_ptr<Impl> self, tcp::socket socket) {
    if (!self->tls) {
      beast::tcp_stream stream(std::move(socket));
      co_await Serve(self, stream);
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *self->tls);
    co_await Serve(self, stream);
  }

  // One connection's requests over `stream`: a beast::tcp_stream, or a
  // beast::ssl_stream over one (its handshake first).
  template <class Stream>
  static asio::awaitable<void> Serve(std::shared_ptr<Impl> self, Stream& stream) {
    constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
    beast::tcp_stream& tcp_layer = beast::get_lowest_layer(stream);
    Conn conn{&tcp_layer};
    const bool over_limit = self->conns.size() >= self->options.max_connections;
    self->conns.insert(&conn);
    struct Unregister {
      Impl* impl;
      Conn* c;
      ~Unregister() { impl->Forget(c); }
    } unregister{self.get(), &conn};

    error_code ec;
    auto tok = asio::redirect_error(asio::use_awaitable, ec);
    std::string remote;
    if (auto ep = tcp_layer.socket().remote_endpoint(ec); !ec) remote = ep.address().to_string();

    if (over_limit) {
      spdlog::warn("http: {} refused: {} connections open (max_connections)", remote, self->conns.size() - 1);
      co_await Refuse(stream);
      co_return;
    }
    if constexpr (kTls) {
      // The handshake counts as the start of the first request.
      tcp_layer.expires_after(self->options.read_timeout);
      co_await stream.async_handshake(asio::ssl::stream_base::server, tok);
      if (ec) {
        spdlog::debug("http {}: TLS handshake failed: {}", remote, ec.message());
        co_return;
      }
    }

    beast::flat_buffer buffer;
    bool first = true;
    for (;;) {
      // Between requests: wait for the first byte of the next one. A new
      // connection gets read_timeout to start, a kept-alive one idle_timeout.
      if (buffer.size() == 0) {
        conn.busy = false;
        if (self->stopped) break;
        tcp_layer.expires_after(first ? self->options.read_timeout : self->options.idle_timeout);
        const size_t n = co_await stream.async_read_some(buffer.prepare(4096), tok);
        if (ec) break;  // closed, reset, idle timeout or Stop(): nothing to answer
        buffer.commit(n);
      }
      first = false;
      conn.busy = true;

      // One deadline for the whole request, headers and body.
      tcp_layer.expires_after(self->options.read_timeout);
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(std::min<size_t>(self->options.max_header_bytes, UINT32_MAX)));
      parser.body_limit(static_cast<std::uint64_t>(self->options.max_body_bytes));
      co_await http::async_read_header(stream, buffer, parser, tok);
      if (!ec && !parser.is_done()) {
        const auto expect = parser.get()[http::field::expect];
        if (EqualsIgnoreCase(std::string_view(expect.data(), expect.size()), "100-continue")) {
          http::response<http::empty_body> cont{http::status::continue_, parser.get().version()};
          co_await http::async_write(stream, cont, tok);
        }
        if (!ec) co_await http::async_read(stream, buffer, parser, tok);
      }
      if (ec) {
        int status = 0;
        std::string message;
        if (ec == http::error::header_limit) {
          status = 431;
          message = "request headers too large (limit " + std::to_string(self->options.max_header_bytes) + " bytes)";
        } else if (ec == http::error::body_limit) {
          status = 413;
          message = "request body too large (limit " + std::to_string(self->options.max_body_bytes) + " bytes)";
        } else if (ec.category() == error_code(http::error::bad_target).category() && ec != http::error::end_of_stream &&
                   ec != http::error::partial_message) {
          status = 400;
          message = "bad request: " + ec.message();
        }
        // Everything else (timeout, reset, EOF mid-request, Stop) just closes.
        if (status != 0) {
          spdlog::debug("http {} -> {} ({})", remote, status, ec.message());
          error_code wec;
          tcp_layer.expires_after(self->options.write_timeout);
          co_await Send(stream, 11, false, false, HttpResponse::Error(status, message), wec);
          if (!wec) co_await Linger(tcp_layer);
        } else {
          spdlog::debug("http {}: connection dropped mid-request: {}", remote, ec.message());
        }
        co_return;
      }

      http::request<http::string_body> req = parser.release();
      HttpRequest request;
      request.method = std::string(req.method_string());
      request.target = std::string(req.target());
      ParseTarget(request.target, &request.path, &request.query);
      request.headers.reserve(std::distance(req.begin(), req.end()));
      for (const auto& field : req) request.headers.emplace_back(field.name_string(), field.value());
      request.body = std::move(req.body());
      request.remote_address = remote;

      const auto started = std::chrono::steady_clock::now();
      HttpResponse response;
      if (self->slow_pool && self->options.slow_request(request)) {
        // The session (and `request`) live until this resumes on the I/O thread.
        response = co_await asio::co_spawn(
            *self->slow_pool,
            [router = &self->router, &request, nice = self->options.slow_handler_nice]() -> asio::awaitable<HttpResponse> {
              LowerThisThreadsPriority(nice);
              co_return router->Handle(request);
            },
            asio::use_awaitable);
      } else {
        response = self->router.Handle(request);
      }
      const double handler_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      // The raw path (the parser allows no control characters in it, unlike
      // the decoded one) and never the query or a header: no token or
      // injected line reaches the log.
      spdlog::debug("http {} {} {} {} {}B {:.2f}ms", remote, request.method,
                    std::string_view(request.target).substr(0, request.target.find('?')), response.status,
                    response.body.size(), handler_ms);
      if (self->options.on_response) {
        try {
          self->options.on_response(HttpExchange{request, self->router.RouteFor(request.path), response.status,
                                                 response.body.size(), handler_ms / 1000});
        } catch (const std::exception& e) {
          spdlog::error("http: on_response failed: {}", e.what());
        }
      }

      const bool keep_alive = req.keep_alive() && !self->stopped;
      tcp_layer.expires_after(self->options.write_timeout);
      co_await Send(stream, req.version(), keep_alive, request.method == "HEAD", std::move(response), ec);
      if (ec || !keep_alive) break;
    }
    error_code sec;
    if constexpr (kTls) {
      // close_notify, briefly: a client that never answers it costs no more.
      tcp_layer.expires_after(kLingerTime);
      co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, sec));
    }
    tcp_layer.socket().shutdown(tcp::socket::shutdown_send, sec);
  }

  // Answers a connection over max_connections 503 and closes it. Over TLS
  // there is no cheap way to answer: the connection just closes.
  template <class Stream>
  static asio::awaitable<void> Refuse(Stream& stream) {
    beast::tcp_stream& tcp_layer = beast::get_lowest_layer(stream);
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      error_code ec;
      HttpResponse r = HttpResponse::Error(503, "too many connections");
      r.headers.emplace_back("Retry-After", "1");
      tcp_layer.expires_after(kRefuseWriteTime);
      co_await Send(stream, 11, false, false, std::move(r), ec);
    }
    co_await Linger(tcp_layer);
  }

  // Writes `r` (the caller has set the deadline).
  template <class Stream>
  static asio::awaitable<void> Send(Stream& stream, unsigned version, bool keep_alive, bool head,
                                    HttpResponse r, error_code& ec) {
    auto tok = asio::redirect_error(asio::use_awaitable, ec);
    if (r.status < 100 || r.status > 599) {
      spdlog::error("http: handler returned status {}; sending 500", r.status);
      r = HttpResponse::Error(500, "internal error");
    }
    // No body is allowed with these; Beast would throw on one.
    const bool bodiless = r.status < 200 || r.status == 204 || r.status == 304;
    http::response_header<> header;
    header.version(version);
    header.result(static_cast<unsigned>(r.status));
    header.set(http::field::server, "gpuscaler");
    header.set(http::field::content_type, Sanitized(r.content_type));
    header.set(http::field::cache_control, "no-store");
    for (const auto& [k, v] : r.headers) {
      if (!IsFramingHeader(k)) header.set(Sanitized(k), Sanitized(v));
    }
    if (head || bodiless) {
      http::response<http::empty_body> res{std::move(header)};
      if (head && !bodiless) {
        // The router kept the GET body's length for HEAD.
        const std::string length = r.Header("Content-Length");
        res.content_length(std::strtoull(length.c_str(), nullptr, 10));
      }
      res.keep_alive(keep_alive);
      co_await http::async_write(stream, res, tok);
      co_return;
    }
    http::response<http::string_body> res{std::move(header)};
    res.body() = std::move(r.body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    co_await http::async_write(stream, res, tok);
  }

  static asio::awaitable<void> Linger(beast::tcp_stream& stream) {
    error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.expires_after(kLingerTime);
    std::array<char, 4096> sink;
    size_t drained = 0;
    while (!ec && drained < kLingerBytes) {
      drained += co_await stream.async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
    }
  }
};

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, Router router)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(router))) {}

HttpServer::~HttpServer() {
  Stop();
  impl_->grace_timer.cancel();
  impl_->CloseAll();
  // Slow handlers still running finish; their sessions resume (and end) when
  // the io_context next runs or is destroyed.
  if (impl_->slow_pool) impl_->slow_pool->join();
}

Status HttpServer::Start() {
  Impl& s = *impl_;
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  if (s.started) return Error::Internal("http server on " + where + " started twice");
  if (!s.options.tls_certificate_pem.empty()) {
    if (Status tls = s.MakeTlsContext(); !tls.ok()) return tls;
  }
  error_code ec;
  auto address = asio::ip::make_address(s.options.host == "localhost" ? "127.0.0.1" : s.options.host, ec);
  if (ec) return Error::Config("listen address " + where + ": not an IP address (" + ec.message() + ")");
  const tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR: a restarted daemon can bind while old connections sit in
  // TIME_WAIT (on Linux it does not allow two live listeners on one port).
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    s.acceptor.close(ignored);
    return Error::Config("cannot listen on " + where + ": " + ec.message());
  }
  s.bound_port = s.acceptor.local_endpoint(ec).port();
  s.started = true;
  asio::co_spawn(s.io, s.Accept(), [](std::exception_ptr e) { Impl::LogIfThrew(e, "accept loop"); });
  return Status();
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

size_t HttpServer::open_connections() const { return impl_->conns.size(); }

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  error_code ec;
  s.acceptor.close(ec);
  // Idle connections go now; busy ones finish their request (keep_alive is
  // off once stopped) and leave through Forget().
  for (Impl::Conn* c : s.conns) {
    if (!c->busy) c->tcp->socket().close(ec);
  }
  if (s.conns.empty()) return;
  s.grace_timer.expires_after(s.options.stop_grace);
  s.grace_timer.async_wait([weak = std::weak_ptr<Impl>(impl_)](const error_code& e) {
    auto impl = weak.lock();
    if (e || !impl) return;
    if (!impl->conns.empty())
      spdlog::warn("http: closing {} connection(s) still busy after the stop grace period", impl->conns.size());
    impl->CloseAll();
  });
}

}  // namespace gpuscaler::server
