// FixtureHttpServer: a tiny HTTP/1.1 (and, with a certificate, HTTPS) server
// on 127.0.0.1 and a free port, for tests that need something to answer a
// client: canned Prometheus/RabbitMQ answers, a DCGM exporter's /metrics for
// a real Prometheus to scrape, a peer that never answers. POSIX sockets and
// OpenSSL, no Asio, so it checks the client with independent code.
//
// One request per connection (answers carry Connection: close); each
// connection is served on its own thread, so a hanging answer does not block
// others. The handler may run on several threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace gpuscaler::testing {

struct FixtureRequest {
  std::string method;
  std::string target;  // as sent: "/api/v1/query?query=up"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
  // The target without its query string.
  std::string Path() const;
};

struct FixtureResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body{};
  std::vector<std::pair<std::string, std::string>> headers{};
  // Never answer: hold the connection open until the server stops.
  bool hang = false;
  // Declare this Content-Length instead of the body's size (a lying peer).
  std::optional<size_t> content_length{};
  // A streamed answer (a Kubernetes watch): when set, `body` is ignored and
  // the body is sent chunked, one chunk per non-empty piece this returns,
  // until it returns false, the client goes away or the server stops. It is
  // called again right after each piece, so it should wait (briefly, e.g.
  // 50 ms) for something to send and may return true with nothing.
  std::function<bool(std::string* piece)> stream{};
};

using FixtureHandler = std::function<FixtureResponse(const FixtureRequest&)>;

struct FixtureTls {
  std::string cert_pem;  // server certificate (chain), PEM
  std::string key_pem;   // its private key, PEM
};

class FixtureHttpServer {
 public:
  // Binds 127.0.0.1:0 and starts serving. Aborts the test binary when the
  // socket or the TLS setup fails (a broken test machine, not a test result).
  explicit FixtureHttpServer(FixtureHandler handler, std::optional<FixtureTls> tls = std::nullopt);
  ~FixtureHttpServer();
  FixtureHttpServer(const FixtureHttpServer&) = delete;
  FixtureHttpServer& operator=(const FixtureHttpServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT" (or https).
  std::string url() const;
  // Requests read so far (answered or not).
  int requests() const { return requests_.load(); }
  // Replaces the handler for later requests.
  void SetHandler(FixtureHandler handler);
  // Stops accepting, releases hanging connections and joins every thread.
  // Idempotent; after it, connects to the port are refused.
  void Stop();

 private:
  void AcceptLoop();
  void Serve(int fd);
  FixtureHandler CurrentHandler();

  std::mutex mu_;
  FixtureHandler handler_;
  void* tls_ctx_ = nullptr;  // SSL_CTX*
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written once by Stop() to wake every poll
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<bool> stopped_{false};
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // guarded by mu_
};

}  // namespace gpuscaler::testing
