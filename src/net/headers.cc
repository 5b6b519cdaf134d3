// The parts of the client that need no sockets: headers and auth values.
#include <cstdint>

#include "gpuscaler/model/text.h"
#include "gpuscaler/net/http_client.h"

namespace gpuscaler::net {

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

namespace {

// RFC 4648 base64 of `bytes` in `alphabet` (64 characters), padded with '='
// to a multiple of four characters when `pad`.
std::string Base64(std::string_view bytes, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += alphabet[(n >> 6) & 63];
    out += alphabet[n & 63];
  }
  const size_t left = bytes.size() - i;
  if (left > 0) {
    uint32_t n = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (left == 2) n |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    if (left == 2) out += alphabet[(n >> 6) & 63];
    if (pad) out.append(left == 2 ? 1 : 2, '=');
  }
  return out;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  return Base64(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", /*pad=*/true);
}

std::string Base64UrlEncode(std::string_view bytes) {
  return Base64(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", /*pad=*/false);
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
