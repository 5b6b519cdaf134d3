#include "gpuscaler/net/url.h"

#include <boost/url/encode.hpp>
#include <boost/url/grammar/parse.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/rfc/uri_rule.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace gpuscaler::net {
namespace {

bool ParsePort(std::string_view text, uint16_t* port) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

// Stricter than RFC 3986's reg-name (no sub-delims, no percent-encoding):
// what a DNS name or a Kubernetes service name can be.
bool ValidHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// How messages name the URL: quoted, unless it may carry credentials.
std::string Quoted(std::string_view url) {
  if (url.find('@') != std::string_view::npos) return "(not repeated: it contains '@')";
  std::string quoted(1, '\'');
  quoted.append(url).push_back('\'');
  return quoted;
}

// Why `url`, which Boost.URL rejected, is not RFC 3986 syntax: the first byte
// that cannot stand where it is.
std::string SyntaxError(std::string_view url) {
  if (url.find("://") == std::string_view::npos) return "expected http://host[:port]/path or https://...";
  const char* it = url.data();
  (void)boost::urls::grammar::parse(it, url.data() + url.size(), boost::urls::uri_rule);
  const size_t offset = static_cast<size_t>(it - url.data());
  if (offset >= url.size()) return "ends too early";
  const unsigned char c = static_cast<unsigned char>(url[offset]);
  if (c <= ' ' || c >= 0x7f) {
    return "unencoded blank, control or non-ASCII byte at offset " + std::to_string(offset) + " (percent-encode it)";
  }
  return "unexpected '" + std::string(1, static_cast<char>(c)) + "' at offset " + std::to_string(offset);
}

}  // namespace

std::string Url::HostPort() const {
  return (ipv6_literal ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Url::HostHeader() const {
  const std::string h = ipv6_literal ? "[" + host + "]" : host;
  const uint16_t default_port = tls() ? 443 : 80;
  return port == default_port ? h : h + ":" + std::to_string(port);
}

Result<Url> ParseUrl(std::string_view url) {
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) return Error::Config("URL " + Quoted(url) + ": " + SyntaxError(url));
  const boost::urls::url_view& v = *parsed;
  Url u;
  if (v.scheme_id() == boost::urls::scheme::http) {
    u.scheme = "http";
  } else if (v.scheme_id() == boost::urls::scheme::https) {
    u.scheme = "https";
  } else {
    return Error::Config("URL scheme '" + std::string(v.scheme()) +
                         "' is not supported (use http://host[:port]/path or https://...)");
  }
  if (v.has_userinfo()) {
    return Error::Config("URL for " + u.scheme +
                         "://… carries credentials (user:password@); give them in a file or the environment instead");
  }
  const std::string_view host = v.encoded_host_address();
  if (!v.has_authority() || host.empty()) return Error::Config("URL " + Quoted(url) + " has no host");
  switch (v.host_type()) {
    case boost::urls::host_type::ipv6:
      u.ipv6_literal = true;
      break;
    case boost::urls::host_type::ipvfuture:
      return Error::Config("URL " + Quoted(url) + ": only IPv6 literals are supported between [ ]");
    default:
      if (!std::all_of(host.begin(), host.end(), ValidHostChar)) {
        return Error::Config("URL " + Quoted(url) + ": bad host name");
      }
  }
  u.host = std::string(host);
  const std::string_view path = v.encoded_path();
  // Boost.URL 1.81 ends a port at the first non-digit and takes the rest as
  // the path ("http://host:12ab/" has port "12", path "ab/"); after an
  // authority a path must begin with '/'.
  u.port = u.tls() ? 443 : 80;
  if (v.has_port() && (!ParsePort(v.port(), &u.port) || (!path.empty() && path.front() != '/'))) {
    return Error::Config("URL " + Quoted(url) + ": bad port");
  }
  u.target = path.empty() ? "/" : std::string(path);
  if (v.has_query()) u.target += "?" + std::string(v.encoded_query());
  return u;
}

std::string PercentEncode(std::string_view text) { return boost::urls::encode(text, boost::urls::unreserved_chars); }

}  // namespace gpuscaler::net
