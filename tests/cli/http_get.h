// A minimal blocking HTTP/1.1 client on POSIX sockets, for tests that talk to
// a gpuscaler process on 127.0.0.1 (independent of the client in src/net, so
// the server is checked by other code than its own).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace gpuscaler::testing {

struct HttpReply {
  int status = 0;  // 0: no answer (connection refused, timeout)
  std::string headers;
  std::string body;
};

// `extra_headers` are full lines, each ending in "\r\n".
inline HttpReply HttpRequestTo(uint16_t port, const std::string& method, const std::string& target,
                               const std::string& extra_headers = "", const std::string& body = "",
                               int timeout_ms = 5000) {
  HttpReply reply;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return reply;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return reply;
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers;
  if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      return reply;
    }
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[16384];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return reply;
  reply.status = std::stoi(raw.substr(9, 3));
  reply.headers = raw.substr(0, head_end);
  reply.body = raw.substr(head_end + 4);
  // Chunked bodies (Beast streams some responses): undo the framing.
  if (reply.headers.find("chunked") != std::string::npos) {
    std::string out;
    size_t pos = 0;
    while (pos < reply.body.size()) {
      const size_t eol = reply.body.find("\r\n", pos);
      if (eol == std::string::npos) break;
      const size_t len = std::stoul(reply.body.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) break;
      out += reply.body.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    reply.body = out;
  }
  return reply;
}

inline HttpReply HttpGet(uint16_t port, const std::string& target) { return HttpRequestTo(port, "GET", target); }

}  // namespace gpuscaler::testing
