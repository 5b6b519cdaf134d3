#include "support/fixture_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace gpuscaler::testing {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "FixtureHttpServer: %s\n", what.c_str());
  std::abort();
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 422: return "Unprocessable Entity";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

// Reads and writes one connection, plain or TLS.
class Conn {
 public:
  Conn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  long Read(char* buf, size_t n) {
    if (ssl_ != nullptr) return SSL_read(ssl_, buf, static_cast<int>(n));
    return ::recv(fd_, buf, n, 0);
  }
  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      const long n = ssl_ != nullptr ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                                     : ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

 private:
  int fd_;
  SSL* ssl_;
};

// Reads one request; false when the peer closed or sent garbage.
bool ReadRequest(Conn& conn, FixtureRequest* req) {
  std::string data;
  char buf[8192];
  size_t header_end = std::string::npos;
  while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
    const long n = conn.Read(buf, sizeof buf);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > (1 << 20)) return false;
  }
  std::string_view head(data.data(), header_end);
  const size_t line_end = head.find("\r\n");
  std::string_view request_line = head.substr(0, line_end);
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = request_line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 <= sp1) return false;
  req->method = std::string(request_line.substr(0, sp1));
  req->target = std::string(request_line.substr(sp1 + 1, sp2 - sp1 - 1));
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(pos, end - pos);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      req->headers.emplace_back(std::string(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1))));
    }
    pos = end + 2;
  }
  const size_t length = static_cast<size_t>(std::strtoull(req->Header("Content-Length").c_str(), nullptr, 10));
  req->body = data.substr(header_end + 4);
  while (req->body.size() < length) {
    const long n = conn.Read(buf, sizeof buf);
    if (n <= 0) return false;
    req->body.append(buf, static_cast<size_t>(n));
  }
  req->body.resize(std::min(req->body.size(), length));
  return true;
}

// Sends a streamed answer chunk by chunk (see FixtureResponse::stream).
void SendStream(Conn& conn, int fd, const FixtureResponse& res, const std::atomic<bool>& stopped) {
  std::string head = "HTTP/1.1 " + std::to_string(res.status) + " " + Reason(res.status) + "\r\n";
  head += "Content-Type: " + res.content_type + "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n";
  for (const auto& [k, v] : res.headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  if (!conn.WriteAll(head)) return;
  while (!stopped.load()) {
    // The client sends nothing after its request: readable now means it
    // closed (or reset) the connection, so the stream ends.
    pollfd peer{fd, POLLIN, 0};
    if (::poll(&peer, 1, 0) > 0) return;
    std::string piece;
    const bool more = res.stream(&piece);
    if (!piece.empty()) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      if (!conn.WriteAll(std::string(size) + piece + "\r\n")) return;
    }
    if (!more) break;
  }
  conn.WriteAll("0\r\n\r\n");
}

}  // namespace

std::string FixtureRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

std::string FixtureRequest::Path() const { return target.substr(0, target.find('?')); }

FixtureHttpServer::FixtureHttpServer(FixtureHandler handler, std::optional<FixtureTls> tls)
    : handler_(std::move(handler)) {
  if (tls) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) Die("SSL_CTX_new failed");
    BIO* cert_bio = BIO_new_mem_buf(tls->cert_pem.data(), static_cast<int>(tls->cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    BIO_free(cert_bio);
    BIO* key_bio = BIO_new_mem_buf(tls->key_pem.data(), static_cast<int>(tls->key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    BIO_free(key_bio);
    if (cert == nullptr || key == nullptr || SSL_CTX_use_certificate(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, key) != 1) {
      Die("cannot load the test certificate or key");
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    tls_ctx_ = ctx;
  }
  if (::pipe(wake_pipe_) != 0) Die("pipe failed");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) Die("socket failed");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
    Die("bind/listen on 127.0.0.1:0 failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FixtureHttpServer::~FixtureHttpServer() {
  Stop();
  if (tls_ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(tls_ctx_));
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

std::string FixtureHttpServer::url() const {
  return std::string(tls_ctx_ != nullptr ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

void FixtureHttpServer::SetHandler(FixtureHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

FixtureHandler FixtureHttpServer::CurrentHandler() {
  std::lock_guard<std::mutex> lock(mu_);
  return handler_;
}

void FixtureHttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  const char byte = 1;
  [[maybe_unused]] const auto written = ::write(wake_pipe_[1], &byte, 1);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(connections_);
  }
  for (std::thread& t : threads) t.join();
}

void FixtureHttpServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    // A peer that connects and sends nothing must not hold Stop() forever.
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    std::lock_guard<std::mutex> lock(mu_);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FixtureHttpServer::Serve(int fd) {
  SSL* ssl = nullptr;
  if (tls_ctx_ != nullptr) {
    ssl = SSL_new(static_cast<SSL_CTX*>(tls_ctx_));
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {  // e.g. the client rejected our certificate
      ERR_clear_error();
      SSL_free(ssl);
      ::close(fd);
      return;
    }
  }
  Conn conn(fd, ssl);
  FixtureRequest req;
  if (ReadRequest(conn, &req)) {
    requests_.fetch_add(1);
    FixtureResponse res = CurrentHandler()(req);
    if (res.hang) {
      pollfd wake{wake_pipe_[0], POLLIN, 0};
      while (::poll(&wake, 1, -1) < 0) {
      }
    } else if (res.stream) {
      SendStream(conn, fd, res, stopped_);
    } else {
      std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + Reason(res.status) + "\r\n";
      out += "Content-Type: " + res.content_type + "\r\n";
      out += "Content-Length: " + std::to_string(res.content_length.value_or(res.body.size())) + "\r\n";
      out += "Connection: close\r\n";
      for (const auto& [k, v] : res.headers) out += k + ": " + v + "\r\n";
      out += "\r\n";
      if (req.method != "HEAD") out += res.body;
      conn.WriteAll(out);
    }
  }
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  ::close(fd);
}

}  // namespace gpuscaler::testing
