// The one Beast translation unit of the client: AsyncFetch, and Fetch /
// FetchAll built on it.
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <array>
#include <exception>
#include <optional>

#include "gpuscaler/net/async_http.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::net {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kMaxHeaderBytes = 64 * 1024;

// Names the peer and the step in every failure.
struct Step {
  std::string peer;
  std::chrono::milliseconds timeout;
  std::string name = "resolve";

  Error Fail(const error_code& ec) const {
    if (ec == beast::error::timeout || ec == asio::error::timed_out) {
      return Error::Transient(peer + ": " + name + ": timed out (deadline " + std::to_string(timeout.count()) +
                              " ms)");
    }
    return Error::Transient(peer + ": " + name + ": " + ec.message());
  }
};

Result<std::unique_ptr<ssl::context>> MakeTlsContext(const HttpClientOptions& options) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (options.insecure_skip_verify) {
    ctx->set_verify_mode(ssl::verify_none);
    return ctx;
  }
  ctx->set_verify_mode(ssl::verify_peer);
  error_code ec;
  if (!options.ca_file.empty()) {
    ctx->load_verify_file(options.ca_file, ec);
    if (ec) return Error::Config("ca_file " + options.ca_file + ": cannot load: " + ec.message());
  }
  if (!options.ca_pem.empty()) {
    ctx->add_certificate_authority(asio::buffer(options.ca_pem), ec);
    if (ec) return Error::Config("CA certificate data: cannot load: " + ec.message());
  }
  if (options.ca_file.empty() && options.ca_pem.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return Error::Config("system CA store: cannot load: " + ec.message());
  }
  return ctx;
}

Status AddClientCertificate(ssl::context& ctx, const HttpClientOptions& options) {
  if (options.client_cert_pem.empty() && options.client_key_pem.empty()) return Status::Ok();
  if (options.client_cert_pem.empty() || options.client_key_pem.empty())
    return Error::Config("a client certificate needs both the certificate and its key");
  error_code ec;
  ctx.use_certificate_chain(asio::buffer(options.client_cert_pem), ec);
  if (ec) return Error::Config("client certificate: cannot load: " + ec.message());
  ctx.use_private_key(asio::buffer(options.client_key_pem), ssl::context::pem, ec);
  if (ec) return Error::Config("client key: cannot load: " + ec.message());
  return Status::Ok();
}

// OpenSSL's own name check (rather than a verify callback) so a mismatch
// leaves a verify result that says what was wrong.
bool RequirePeerName(SSL* ssl, const Url& url) {
  if (url.ipv6_literal) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url.host.c_str()) == 1;
  error_code ec;
  asio::ip::make_address_v4(url.host, ec);
  if (!ec) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url.host.c_str()) == 1;
  return SSL_set1_host(ssl, url.host.c_str()) == 1;
}

Error TlsFailure(const Step& step, const error_code& ec, SSL* ssl) {
  Error e = step.Fail(ec);
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return Error::Transient(e.message() + " (certificate: " + X509_verify_cert_error_string(verify) + ")");
  }
  return e;
}

// A header name or value with CR/LF would let a caller's data split the
// request; a method must be a token.
Status CheckRequest(const HttpRequest& request) {
  const auto bad = [](std::string_view text, std::string_view forbidden) {
    return text.find_first_of(forbidden) != std::string_view::npos;
  };
  if (request.method.empty() || bad(request.method, " \t\r\n()<>@,;:\\\"/[]?={}")) {
    return Error::Config("HTTP method '" + request.method + "' is not a token");
  }
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || bad(name, " \t\r\n:")) return Error::Config("bad HTTP header name '" + name + "'");
    // The value is not repeated: it may be a credential.
    if (bad(value, "\r\n")) return Error::Config("HTTP header " + name + ": value contains CR or LF");
  }
  return Status::Ok();
}

http::request<http::string_body> BuildRequest(const HttpRequest& request, const Url& url) {
  http::request<http::string_body> req;
  req.method_string(request.method);
  req.target(url.target);
  req.version(11);
  req.set(http::field::host, url.HostHeader());
  req.set(http::field::user_agent, "gpuscaler");
  req.set(http::field::connection, "close");
  req.body() = request.body;
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
    req.prepare_payload();
  }
  for (const auto& [name, value] : request.headers) req.set(name, value);
  return req;
}

// FetchStream's part of a request: where the body goes and when to stop.
struct StreamSpec {
  const StreamOptions* options = nullptr;
  const std::function<bool(std::string_view)>* on_body = nullptr;
};

// Reads the answer of a streamed request, the body piece by piece. A second
// coroutine polls spec.options->stop and closes the socket, which ends the
// pending read; it only touches the stream while `*done` is false, and both
// run on one thread, so it never sees the stream after this frame is gone.
template <typename Stream>
asio::awaitable<Result<HttpResponse>> ReadStreamed(Stream& stream, beast::flat_buffer& buffer,
                                                   const HttpClientOptions& options, Step& step,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   const StreamSpec& spec) {
  error_code ec;
  auto tok = asio::redirect_error(asio::use_awaitable, ec);
  auto done = std::make_shared<bool>(false);
  auto stopped = std::make_shared<bool>(false);
  auto ex = co_await asio::this_coro::executor;
  auto poll_timer = std::make_shared<asio::steady_timer>(ex);
  struct Finish {
    std::shared_ptr<bool> done;
    std::shared_ptr<asio::steady_timer> timer;
    ~Finish() {
      *done = true;
      timer->cancel();
    }
  } finish{done, poll_timer};
  if (spec.options->stop) {
    auto& lowest = beast::get_lowest_layer(stream);
    const std::function<bool()> stop = spec.options->stop;
    asio::co_spawn(
        ex,
        [done, stopped, poll_timer, stop, &lowest]() -> asio::awaitable<void> {
          while (!*done) {
            poll_timer->expires_after(std::chrono::milliseconds(100));
            error_code wait_ec;
            co_await poll_timer->async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
            if (*done) co_return;
            if (stop()) {
              *stopped = true;
              lowest.socket().close(wait_ec);
              co_return;
            }
          }
        },
        asio::detached);
  }

  http::response_parser<http::buffer_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(boost::none);  // a watch runs as long as the server keeps it
  beast::get_lowest_layer(stream).expires_at(deadline);
  co_await http::async_read_header(stream, buffer, parser, tok);
  if (*stopped) co_return Error::Transient(step.peer + ": stopped before the answer arrived");
  if (ec) co_return step.Fail(ec);
  HttpResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  for (const auto& field : parser.get())
    out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  const bool success = out.status >= 200 && out.status < 300;
  std::array<char, 16384> piece;
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    // Errors are read whole under the overall deadline; a good stream may
    // stay quiet for up to idle_timeout between pieces.
    if (success) {
      beast::get_lowest_layer(stream).expires_after(spec.options->idle_timeout);
    } else {
      beast::get_lowest_layer(stream).expires_at(deadline);
    }
    // read_some, not read: it returns with whatever arrived, so pieces reach
    // the caller as they come and the idle deadline is per piece.
    co_await http::async_read_some(stream, buffer, parser, tok);
    if (ec == http::error::need_buffer) ec = {};
    if (*stopped) co_return out;
    if (ec == beast::error::timeout && success) {
      co_return Error::Transient(step.peer + ": read: no data for " +
                                 std::to_string(spec.options->idle_timeout.count()) + " ms");
    }
    if (ec) co_return step.Fail(ec);
    const size_t n = piece.size() - parser.get().body().size;
    if (n == 0) continue;
    if (!success) {
      if (out.body.size() + n > options.max_body_bytes) {
        co_return Error::InvalidInput(step.peer + ": response body exceeds the limit of " +
                                      std::to_string(options.max_body_bytes) + " bytes");
      }
      out.body.append(piece.data(), n);
    } else if (!(*spec.on_body)(std::string_view(piece.data(), n))) {
      co_return out;
    }
  }
  co_return out;
}

template <typename Stream>
asio::awaitable<Result<HttpResponse>> Exchange(Stream& stream, const HttpRequest& request, const Url& url,
                                               const HttpClientOptions& options, Step& step,
                                               std::chrono::steady_clock::time_point deadline,
                                               const StreamSpec* spec) {
  error_code ec;
  auto tok = asio::redirect_error(asio::use_awaitable, ec);
  http::request<http::string_body> req = BuildRequest(request, url);
  step.name = "write";
  beast::get_lowest_layer(stream).expires_at(deadline);
  co_await http::async_write(stream, req, tok);
  if (ec) co_return step.Fail(ec);
  if (spec != nullptr) {
    step.name = "read";
    beast::flat_buffer stream_buffer;
    co_return co_await ReadStreamed(stream, stream_buffer, options, step, deadline, *spec);
  }

  step.name = "read";
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(options.max_body_bytes);
  if (request.method == "HEAD") parser.skip(true);  // a HEAD answer has headers only
  beast::get_lowest_layer(stream).expires_at(deadline);
  co_await http::async_read(stream, buffer, parser, tok);
  if (ec == http::error::body_limit) {
    co_return Error::InvalidInput(step.peer + ": response body exceeds the limit of " +
                                  std::to_string(options.max_body_bytes) + " bytes");
  }
  if (ec) co_return step.Fail(ec);
  http::response<http::string_body> res = parser.release();
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  out.body = std::move(res.body());
  co_return out;
}

asio::awaitable<Result<HttpResponse>> FetchImpl(const HttpRequest& request, const HttpClientOptions& options,
                                                const StreamSpec* spec = nullptr) {
  Result<Url> parsed = ParseUrl(request.url);
  if (!parsed) co_return parsed.error();
  const Url& url = *parsed;
  if (Status s = CheckRequest(request); !s.ok()) co_return s.error();
  std::unique_ptr<ssl::context> tls;
  if (url.tls()) {
    Result<std::unique_ptr<ssl::context>> ctx = MakeTlsContext(options);
    if (!ctx) co_return ctx.error();
    tls = std::move(ctx).value();
    if (Status s = AddClientCertificate(*tls, options); !s.ok()) co_return s.error();
  }
  auto ex = co_await asio::this_coro::executor;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  Step step{url.HostPort(), options.timeout};
  error_code ec;
  auto tok = asio::redirect_error(asio::use_awaitable, ec);

  // The resolver has no deadline of its own: a timer cancels it. The timer's
  // handler may run after this frame is gone (it can be queued just as the
  // resolve completes), so it shares ownership of what it touches.
  auto resolver = std::make_shared<tcp::resolver>(ex);
  auto resolve_timed_out = std::make_shared<bool>(false);
  asio::steady_timer resolve_deadline(ex, deadline);
  resolve_deadline.async_wait([resolver, resolve_timed_out](const error_code& timer_ec) {
    if (timer_ec) return;
    *resolve_timed_out = true;
    resolver->cancel();
  });
  const tcp::resolver::results_type endpoints =
      co_await resolver->async_resolve(url.host, std::to_string(url.port), tok);
  resolve_deadline.cancel();
  if (*resolve_timed_out) co_return step.Fail(asio::error::timed_out);
  if (ec) co_return step.Fail(ec);

  step.name = "connect";
  if (!url.tls()) {
    beast::tcp_stream stream(ex);
    stream.expires_at(deadline);
    co_await stream.async_connect(endpoints, tok);
    if (ec) co_return step.Fail(ec);
    Result<HttpResponse> result = co_await Exchange(stream, request, url, options, step, deadline, spec);
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    co_return result;
  }

  beast::ssl_stream<beast::tcp_stream> stream(ex, *tls);
  // SNI carries names only, never IP literals (RFC 6066).
  error_code not_ip;
  asio::ip::make_address(url.host, not_ip);
  if (not_ip && !SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str())) {
    co_return Error::Transient(step.peer + ": TLS: cannot set the server name (SNI)");
  }
  if (!options.insecure_skip_verify && !RequirePeerName(stream.native_handle(), url)) {
    co_return Error::Internal(step.peer + ": TLS: cannot set the expected peer name");
  }
  beast::get_lowest_layer(stream).expires_at(deadline);
  co_await beast::get_lowest_layer(stream).async_connect(endpoints, tok);
  if (ec) co_return step.Fail(ec);
  step.name = "TLS handshake";
  beast::get_lowest_layer(stream).expires_at(deadline);
  co_await stream.async_handshake(ssl::stream_base::client, tok);
  if (ec) co_return TlsFailure(step, ec, stream.native_handle());
  // No close_notify exchange afterwards: the request asked for
  // Connection: close and the whole answer is read, so waiting for the
  // peer's alert would only add latency.
  co_return co_await Exchange(stream, request, url, options, step, deadline, spec);
}

asio::awaitable<void> FetchInto(HttpRequest request, HttpClientOptions options,
                                std::optional<Result<HttpResponse>>* slot) {
  *slot = co_await AsyncFetch(std::move(request), std::move(options));
}

}  // namespace

asio::awaitable<Result<HttpResponse>> AsyncFetch(HttpRequest request, HttpClientOptions options) {
  try {
    co_return co_await FetchImpl(request, options);
  } catch (const std::exception& e) {
    co_return Error::Internal(std::string("http client: unexpected exception: ") + e.what());
  }
}

std::vector<Result<HttpResponse>> FetchAll(const std::vector<HttpRequest>& requests,
                                           const HttpClientOptions& options) {
  // Result has no empty state, so each coroutine fills its own slot.
  std::vector<std::optional<Result<HttpResponse>>> slots(requests.size());
  asio::io_context io(1);
  for (size_t i = 0; i < requests.size(); ++i) {
    asio::co_spawn(io, FetchInto(requests[i], options, &slots[i]), [&slots, i](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        slots[i] = Error::Internal(std::string("http client: unexpected exception: ") + ex.what());
      } catch (...) {
        slots[i] = Error::Internal("http client: unexpected exception");
      }
    });
  }
  io.run();
  std::vector<Result<HttpResponse>> out;
  out.reserve(requests.size());
  for (auto& slot : slots) {
    out.push_back(slot ? std::move(*slot) : Result<HttpResponse>(Error::Internal("http client: no result")));
  }
  return out;
}

Result<HttpResponse> FetchStream(const HttpRequest& request, const HttpClientOptions& options,
                                 const StreamOptions& stream, const std::function<bool(std::string_view)>& on_body) {
  std::optional<Result<HttpResponse>> slot;
  asio::io_context io(1);
  const StreamSpec spec{&stream, &on_body};
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          slot = co_await FetchImpl(request, options, &spec);
        } catch (const std::exception& e) {
          slot = Error::Internal(std::string("http client: unexpected exception: ") + e.what());
        }
      },
      asio::detached);
  io.run();
  if (!slot) return Error::Internal("http client: no result");
  return std::move(*slot);
}

Result<HttpResponse> Fetch(const HttpRequest& request, const HttpClientOptions& options) {
  std::vector<Result<HttpResponse>> results = FetchAll({request}, options);
  return std::move(results.front());
}

}  // namespace gpuscaler::net
