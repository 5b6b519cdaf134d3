// URLs for the HTTP client and the clients built on it: parsing an absolute
// http/https URL into what a request needs, and percent-encoding the parts
// callers put into paths and query strings (RFC 3986).
//
// Plain values only (Boost.URL stays in url.cc). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpuscaler/status.h"

namespace gpuscaler::net {

// A URL split into what the client needs.
struct Url {
  std::string scheme;  // "http" | "https" (lower case)
  std::string host;    // as written; an IPv6 literal without its brackets
  uint16_t port = 0;   // explicit, or 80 / 443
  std::string target;  // path + query as written (still percent-encoded), "/" when empty; no fragment
  bool ipv6_literal = false;

  bool tls() const { return scheme == "https"; }
  // "host:port", "[::1]:9090" for IPv6: how errors name the peer.
  std::string HostPort() const;
  // The Host header: host, with ":port" unless it is the scheme's default.
  std::string HostHeader() const;
};

// Parses an absolute http/https URL (RFC 3986 syntax; the scheme in any case).
// kConfig for anything else, the message saying what is wrong: not a URL (with
// the offset of the first byte that cannot stand there, e.g. an unencoded
// blank), another scheme, no host, a host name other than letters, digits,
// '-', '.' and '_', an IP literal that is not IPv6, a port outside 1..65535,
// or user:password@ in the URL. Credentials belong in files, and error
// messages must not carry them: a URL with '@' in it is then not repeated.
Result<Url> ParseUrl(std::string_view url);

// Keeps the unreserved characters (A-Z a-z 0-9 - . _ ~) and writes every
// other byte as %XX, upper-case hex: "/" -> "%2F", " " -> "%20",
// "%" -> "%25". Safe both for one path segment and for a query-string
// component.
std::string PercentEncode(std::string_view text);

}  // namespace gpuscaler::net
