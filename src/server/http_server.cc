// The only Beast translation unit of the server (Beast headers are slow to
// compile: keep them here).
#include "gpuscaler/server/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <set>

namespace gpuscaler::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io_context, HttpServerOptions o, Router r)
      : io(io_context), options(std::move(o)), router(std::move(r)), acceptor(io_context) {}

  asio::io_context& io;
  HttpServerOptions options;
  Router router;
  tcp::acceptor acceptor;
  uint16_t bound_port = 0;
  bool stopped = false;
  std::set<beast::tcp_stream*> streams;  // open connections, for Stop()

  asio::awaitable<void> Accept() {
    auto self = shared_from_this();
    while (!stopped) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (stopped || ec == asio::error::operation_aborted) break;
        // Out of file descriptors and the like: log, do not spin.
        spdlog::warn("http: accept failed: {}", ec.message());
        continue;
      }
      asio::co_spawn(io, Session(self, std::move(socket)), asio::detached);
    }
  }

  static asio::awaitable<void> Session(std::shared_ptr<Impl> self, tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    const bool over_limit = self->streams.size() >= self->options.max_connections;
    self->streams.insert(&stream);
    struct Forget {
      Impl* impl;
      beast::tcp_stream* s;
      ~Forget() { impl->streams.erase(s); }
    } forget{self.get(), &stream};
    boost::system::error_code ec;
    auto tok = asio::redirect_error(asio::use_awaitable, ec);
    std::string remote;
    {
      boost::system::error_code rec;
      auto ep = stream.socket().remote_endpoint(rec);
      if (!rec) remote = ep.address().to_string();
    }
    if (over_limit) {
      co_await Send(stream, 11, false, HttpResponse::Error(503, "too many connections"), self->options, ec);
      stream.socket().shutdown(tcp::socket::shutdown_both, ec);
      co_return;
    }
    beast::flat_buffer buffer;
    bool first = true;
    while (!self->stopped) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<uint32_t>(self->options.max_header_bytes));
      parser.body_limit(self->options.max_body_bytes);
      // A new request on a kept-alive connection may start after the idle
      // timeout; once it has started it must finish within read_timeout.
      // One deadline covers both here: the longer applies before the first
      // byte, the read timeout to the whole first request.
      stream.expires_after(first ? self->options.read_timeout : self->options.idle_timeout);
      co_await http::async_read_header(stream, buffer, parser, tok);
      if (!ec && !parser.is_done()) {
        stream.expires_after(self->options.read_timeout);
        co_await http::async_read(stream, buffer, parser, tok);
      }
      first = false;
      if (ec) {
        int status = 0;
        if (ec == http::error::header_limit) status = 431;
        else if (ec == http::error::body_limit) status = 413;
        else if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
                 ec != asio::error::operation_aborted && ec != asio::error::connection_reset &&
                 ec != asio::error::eof && ec != http::error::partial_message)
          status = 400;
        if (status != 0) {
          boost::system::error_code wec;
          co_await Send(stream, 11,
                        false,
                        HttpResponse::Error(status, status == 431   ? "request headers too large"
                                                    : status == 413 ? "request body too large"
                                                                    : "bad request: " + ec.message()),
                        self->options, wec);
        }
        break;
      }
      http::request<http::string_body> req = parser.release();
      HttpRequest request;
      request.method = std::string(req.method_string());
      request.target = std::string(req.target());
      ParseTarget(request.target, &request.path, &request.query);
      for (const auto& field : req) request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      request.body = std::move(req.body());
      request.remote_address = remote;
      HttpResponse response = self->router.Handle(request);
      spdlog::debug("http {} {} {} -> {}", remote, request.method, request.path, response.status);
      const bool keep_alive = req.keep_alive() && !self->stopped;
      co_await Send(stream, req.version(), keep_alive, std::move(response), self->options, ec);
      if (ec || !keep_alive) break;
    }
    boost::system::error_code sec;
    stream.socket().shutdown(tcp::socket::shutdown_send, sec);
  }

  static asio::awaitable<void> Send(beast::tcp_stream& stream, unsigned version, bool keep_alive, HttpResponse r,
                                    const HttpServerOptions& options, boost::system::error_code& ec) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "gpuscaler");
    res.set(http::field::content_type, r.content_type);
    res.set(http::field::cache_control, "no-store");
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keep_alive);
    res.body() = std::move(r.body);
    res.prepare_payload();
    stream.expires_after(options.write_timeout);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
  }
};

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, Router router)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(router))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(impl_->options.host, ec);
  const std::string where = impl_->options.host + ":" + std::to_string(impl_->options.port);
  if (ec) return Error::Config("listen address " + where + ": " + ec.message());
  tcp::endpoint endpoint(address, impl_->options.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error::Config("cannot listen on " + where + ": " + ec.message());
  impl_->bound_port = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->Accept(), asio::detached);
  return Status();
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

size_t HttpServer::open_connections() const { return impl_->streams.size(); }

void HttpServer::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
  for (beast::tcp_stream* s : impl_->streams) s->socket().close(ec);
}

}  // namespace gpuscaler::server
