// HttpServer: HTTP/1.1 on Boost.Beast, serving a Router. Runs on the
// io_context it is given (the daemon's single I/O thread): one coroutine per
// connection, keep-alive, and the limits that keep one client from hurting
// the others or the control loop:
//  - a request's headers must arrive within read_timeout (a slowloris client
//    trickling bytes is cut off) and fit max_header_bytes (431 otherwise);
//  - a body larger than max_body_bytes gets 413;
//  - an idle keep-alive connection is closed after idle_timeout;
//  - beyond max_connections a new connection gets 503 and is closed.
// Handlers run on the I/O thread, so they must be quick (read published
// state; never block on the cloud). The Authorization header is never
// logged. Not thread-safe: Start/Stop/port from the I/O thread or before
// io_context::run.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "gpuscaler/server/router.h"
#include "gpuscaler/status.h"

namespace boost::asio {
class io_context;
}

namespace gpuscaler::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: any free port (see HttpServer::port)
  size_t max_header_bytes = 8 * 1024;
  size_t max_body_bytes = 1024 * 1024;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds write_timeout{10000};
  size_t max_connections = 2048;
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Router router);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. kConfig when the address cannot be bound.
  Status Start();
  // The bound port (after Start).
  uint16_t port() const;
  // Stops accepting and closes every connection.
  void Stop();
  size_t open_connections() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpuscaler::server
