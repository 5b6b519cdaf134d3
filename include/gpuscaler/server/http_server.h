// HttpServer: HTTP/1.1 on Boost.Beast, serving a Router. It runs on the
// io_context it is given (the daemon's single I/O thread), one coroutine per
// connection, keep-alive, with the limits that keep one client from hurting
// the others or the control loop:
//  - a new connection must send its request within read_timeout, and once
//    the first byte of any request has arrived the whole request (headers
//    and body) must arrive within read_timeout: a slowloris client trickling
//    bytes is disconnected, and since every connection is its own coroutine
//    it never delays the others;
//  - request line plus headers larger than max_header_bytes: 431; a body
//    larger than max_body_bytes (declared or streamed): 413; a malformed
//    request: 400. Each of these closes the connection after the response;
//  - a kept-alive connection with no new request for idle_timeout is closed;
//  - writing a response must finish within write_timeout;
//  - beyond max_connections, a new connection is answered 503 and closed;
//  - "Expect: 100-continue" is answered before the body is read.
//
// With a TLS certificate and key (options.tls_*) every connection is HTTPS
// (TLS 1.2 or newer, Boost.Beast's ssl_stream over OpenSSL): the handshake
// must finish within read_timeout; a connection over max_connections is
// closed without an answer.
//
// Handlers run on the I/O thread, synchronously: they must be quick (read
// published state, render a small page; never wait for the cloud, a tick or
// a lock held across one). A slow handler would stall every connection and
// the daemon's timers, so requests that options.slow_request selects (reading
// the disk: cost reports, audit queries) run on a small pool of their own
// threads instead; their connection waits, the I/O thread does not.
//
// Logging: one access-log line per request at debug level (remote address,
// method, path without the query, status, body bytes, handler time); no
// header is ever logged, so the Authorization token never reaches a log.
//
// Threading: the io_context must be run by one thread. Start, Stop, port and
// open_connections are called on that thread, or while it is not running.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "gpuscaler/server/router.h"
#include "gpuscaler/status.h"

namespace boost::asio {
class io_context;
}

namespace gpuscaler::server {

// What the server reports after each routed request (for the daemon's
// gpuscaler_http_requests_total{path,code}). Requests refused before routing
// (431, 413, 400, 503) are not reported.
struct HttpExchange {
  const HttpRequest& request;
  std::string_view route;  // Router::RouteFor(path): bounded, "" when no route matched
  int status;
  size_t body_bytes;
  double handler_seconds;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address ("0.0.0.0", "::1") or "localhost"
  uint16_t port = 8080;            // 0: any free port (see HttpServer::port)
  size_t max_header_bytes = 8 * 1024;
  size_t max_body_bytes = 1024 * 1024;
  std::chrono::milliseconds read_timeout{10'000};   // per request, first byte to last
  std::chrono::milliseconds idle_timeout{30'000};   // between requests on a kept-alive connection
  std::chrono::milliseconds write_timeout{10'000};  // per response
  size_t max_connections = 2048;
  std::chrono::milliseconds stop_grace{5'000};      // Stop(): time left to requests in flight
  // Called on the I/O thread after each routed request; must be quick and
  // must not throw. Empty: nothing is called.
  std::function<void(const HttpExchange&)> on_response;
  // Requests for which this returns true are handled on a pool of
  // slow_handler_threads threads (their handlers must then be thread-safe);
  // the rest on the I/O thread. Called on the I/O thread, once per request;
  // must be quick. Empty: every request on the I/O thread. At most one
  // request per connection is in flight, so max_connections bounds the queue.
  std::function<bool(const HttpRequest&)> slow_request;
  size_t slow_handler_threads = 2;
  // Added to the pool threads' nice value (Linux: per thread): when the
  // CPUs are busy, slow requests yield to the I/O thread and to the daemon's
  // tick. 0: same priority.
  int slow_handler_nice = 10;
  // PEM certificate chain (leaf first) and its PEM private key: serve HTTPS
  // instead of HTTP. Both empty (the default): plain HTTP.
  std::string tls_certificate_pem;
  std::string tls_private_key_pem;
};

class HttpServer {
 public:
  // Nothing happens until Start. The router is owned by the server.
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Router router);
  // Closes the listener and every connection at once (no grace), then waits
  // for slow handlers still running. The io_context must outlive the server.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts accepting (on the io_context). kConfig when
  // the host is not an address, the address cannot be bound (in use, no
  // permission) or the TLS certificate or key is unusable. Call once.
  Status Start();

  // The bound port (the chosen one when options.port is 0); 0 before Start.
  uint16_t port() const;

  // Stops accepting (the port is released at once) and closes idle
  // connections. A request being received or answered finishes, with
  // "Connection: close"; whatever is still open after options.stop_grace is
  // closed. When the last connection is gone the server holds no more work
  // on the io_context, so io_context::run returns if nothing else is
  // pending. Idempotent.
  void Stop();

  // Connections currently open (including one being refused with 503).
  size_t open_connections() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpuscaler::server
