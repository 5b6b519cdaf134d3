// The parts of the client that need no sockets: URLs, headers, auth values.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "gpuscaler/net/http_client.h"

namespace gpuscaler::net {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ParsePort(std::string_view text, uint16_t* port) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

bool ValidHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

std::string Url::HostPort() const {
  return (ipv6_literal ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Url::HostHeader() const {
  const std::string h = ipv6_literal ? "[" + host + "]" : host;
  const uint16_t default_port = tls() ? 443 : 80;
  return port == default_port ? h : h + ":" + std::to_string(port);
}

Result<Url> ParseUrl(std::string_view url) {
  Url u;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return Error::Config("URL '" + std::string(url) + "': expected http://host[:port]/path or https://...");
  }
  u.scheme = Lower(url.substr(0, scheme_end));
  if (u.scheme != "http" && u.scheme != "https") {
    return Error::Config("URL scheme '" + u.scheme + "' is not supported (use http or https)");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  const size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target = authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  // The URL is not repeated in this message: the userinfo may be a password.
  if (authority.find('@') != std::string_view::npos) {
    return Error::Config("URL for " + u.scheme +
                         "://… carries credentials (user:password@); give them in a file or the environment instead");
  }
  u.port = u.tls() ? 443 : 80;
  std::string_view host;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error::Config("URL '" + std::string(url) + "': unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && (after.front() != ':' || !ParsePort(after.substr(1), &u.port))) {
      return Error::Config("URL '" + std::string(url) + "': bad port");
    }
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos) {
      return Error::Config("URL '" + std::string(url) + "': bad IPv6 literal");
    }
    u.ipv6_literal = true;
  } else {
    host = authority;
    if (const size_t colon = authority.find(':'); colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      if (!ParsePort(authority.substr(colon + 1), &u.port)) {
        return Error::Config("URL '" + std::string(url) + "': bad port");
      }
    }
    if (host.empty()) return Error::Config("URL '" + std::string(url) + "' has no host");
    if (!std::all_of(host.begin(), host.end(), ValidHostChar)) {
      return Error::Config("URL '" + std::string(url) + "': bad host name");
    }
  }
  u.host = std::string(host);
  if (const size_t hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (target.empty()) {
    u.target = "/";
  } else if (target.front() == '?') {
    u.target = "/" + std::string(target);
  } else {
    u.target = std::string(target);
  }
  if (u.target.find_first_of(" \r\n\t") != std::string::npos) {
    return Error::Config("URL '" + std::string(url) + "': unencoded blank or control character in the path");
  }
  return u;
}

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  const size_t left = bytes.size() - i;
  if (left > 0) {
    uint32_t n = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (left == 2) n |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += left == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string BasicAuthorization(std::string_view username, std::string_view password) {
  std::string plain;
  plain.reserve(username.size() + 1 + password.size());
  plain.append(username).append(":").append(password);
  return "Basic " + Base64Encode(plain);
}

std::string BearerAuthorization(std::string_view token) { return "Bearer " + std::string(token); }

void SetHeader(HttpRequest& request, std::string_view name, std::string value) {
  for (auto& [k, v] : request.headers) {
    if (EqualsIgnoreCase(k, name)) {
      v = std::move(value);
      return;
    }
  }
  request.headers.emplace_back(std::string(name), std::move(value));
}

}  // namespace gpuscaler::net
