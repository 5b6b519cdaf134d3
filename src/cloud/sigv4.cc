#include "gpuscaler/cloud/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "gpuscaler/model/text.h"

namespace gpuscaler::cloud {
namespace {

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trims and collapses inner runs of spaces; an obsolete folded value
// ("a\n  b") becomes "a,b", as the suite's multiline case expects.
std::string CanonicalHeaderValue(std::string_view value) {
  const std::vector<std::string_view> lines = Split(value, '\n');
  std::string joined(Trim(lines.front()));
  for (size_t i = 1; i < lines.size(); ++i) {
    joined.push_back(',');
    joined.append(Trim(lines[i]));
  }
  std::string out;
  for (char c : joined) {
    if (c == '\t') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(c);
  }
  return std::string(Trim(out));
}

std::string NormalizePath(std::string_view path) {
  std::vector<std::string_view> segments;
  for (std::string_view seg : Split(path, '/')) {
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
  }
  std::string out;
  for (std::string_view seg : segments) {
    out.push_back('/');
    out.append(seg);
  }
  const bool trailing = !path.empty() && path.back() == '/';
  if (out.empty() || trailing) out.push_back('/');
  return out;
}

std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> params;
  for (std::string_view part : Split(query, '&')) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    params.emplace_back(UriEncode(UriDecode(key)), UriEncode(UriDecode(value)));
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out.push_back('&');
    out += k;
    out.push_back('=');
    out += v;
  }
  return out;
}

std::string Digest(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(md), len);
}

bool HasHeader(const SigningRequest& r, std::string_view lower_name) {
  return std::any_of(r.headers.begin(), r.headers.end(),
                     [&](const auto& h) { return Lower(h.first) == lower_name; });
}

}  // namespace

std::string Sha256Hex(std::string_view data) { return HexLower(Digest(data)); }

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  return out;
}

std::string UriDecode(std::string_view text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && nibble(text[i + 1]) >= 0 && nibble(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(nibble(text[i + 1]) * 16 + nibble(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string AmzDate(WallTime t) {
  std::time_t tt = static_cast<std::time_t>(ToUnixSeconds(t));
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string AmzDay(WallTime t) { return AmzDate(t).substr(0, 8); }

namespace {

std::string CanonicalRequestImpl(const SigningRequest& request, const SigningParams& params,
                                 std::string_view only_headers, std::string* signed_headers) {
  std::map<std::string, std::string> headers;
  std::vector<std::string_view> wanted;
  if (!only_headers.empty()) wanted = Split(only_headers, ';');
  for (const auto& [name, value] : request.headers) {
    std::string key = Lower(Trim(name));
    if (key == "authorization") continue;
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), key) == wanted.end()) continue;
    auto [it, inserted] = headers.try_emplace(key, CanonicalHeaderValue(value));
    if (!inserted) it->second += "," + CanonicalHeaderValue(value);
  }
  std::string path = params.normalize_path ? NormalizePath(request.path) : request.path;
  if (path.empty()) path = "/";

  std::string out = request.method;
  out += '\n';
  out += UriEncode(path, /*keep_slash=*/true);
  out += '\n';
  out += CanonicalQuery(request.query);
  out += '\n';
  std::string names;
  for (const auto& [name, value] : headers) {
    out += name;
    out += ':';
    out += value;
    out += '\n';
    if (!names.empty()) names += ';';
    names += name;
  }
  out += '\n';
  out += names;
  out += '\n';
  out += Sha256Hex(request.body);
  if (signed_headers) *signed_headers = names;
  return out;
}

}  // namespace

std::string CanonicalRequest(const SigningRequest& request, const SigningParams& params,
                             std::string* signed_headers) {
  return CanonicalRequestImpl(request, params, {}, signed_headers);
}

std::string CanonicalRequestFor(const SigningRequest& request, const SigningParams& params,
                                std::string_view signed_headers) {
  return CanonicalRequestImpl(request, params, signed_headers, nullptr);
}

std::string CredentialScope(const SigningParams& params) {
  return AmzDay(params.time) + "/" + params.region + "/" + params.service + "/aws4_request";
}

std::string StringToSign(std::string_view canonical_request, const SigningParams& params) {
  return "AWS4-HMAC-SHA256\n" + AmzDate(params.time) + "\n" + CredentialScope(params) + "\n" +
         Sha256Hex(canonical_request);
}

std::string SigningKey(std::string_view secret_access_key, const SigningParams& params) {
  std::string key = HmacSha256("AWS4" + std::string(secret_access_key), AmzDay(params.time));
  key = HmacSha256(key, params.region);
  key = HmacSha256(key, params.service);
  return HmacSha256(key, "aws4_request");
}

std::string Signature(std::string_view secret_access_key, std::string_view string_to_sign,
                      const SigningParams& params) {
  return HexLower(HmacSha256(SigningKey(secret_access_key, params), string_to_sign));
}

Status Sign(SigningRequest& request, const Credentials& credentials, const SigningParams& params) {
  if (credentials.empty()) return Error::Auth("sigv4: no credentials to sign with");
  if (!HasHeader(request, "host")) return Error::InvalidInput("sigv4: request has no Host header");
  if (!HasHeader(request, "x-amz-date")) request.headers.emplace_back("X-Amz-Date", AmzDate(params.time));
  const bool add_token = !credentials.session_token.empty() && !HasHeader(request, "x-amz-security-token");
  if (add_token && params.sign_security_token) {
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  std::string signed_headers;
  const std::string creq = CanonicalRequest(request, params, &signed_headers);
  const std::string sig = Signature(credentials.secret_access_key, StringToSign(creq, params), params);
  if (add_token && !params.sign_security_token) {
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  request.headers.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" +
                                                    CredentialScope(params) + ", SignedHeaders=" +
                                                    signed_headers + ", Signature=" + sig);
  return Status::Ok();
}

Result<AuthorizationHeader> ParseAuthorization(std::string_view value) {
  constexpr std::string_view kAlgo = "AWS4-HMAC-SHA256";
  value = Trim(value);
  if (value.substr(0, kAlgo.size()) != kAlgo) return Error::Auth("authorization: not AWS4-HMAC-SHA256");
  value.remove_prefix(kAlgo.size());
  AuthorizationHeader out;
  std::string credential;
  for (std::string_view part : Split(value, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view k = Trim(part.substr(0, eq));
    std::string v(Trim(part.substr(eq + 1)));
    if (k == "Credential") credential = v;
    else if (k == "SignedHeaders") out.signed_headers = v;
    else if (k == "Signature") out.signature = v;
  }
  // Credential=AKID/day/region/service/aws4_request
  const std::vector<std::string_view> scope = Split(credential, '/');
  if (scope.size() != 5 || scope[4] != "aws4_request" || scope[0].empty() || out.signed_headers.empty() ||
      out.signature.empty()) {
    return Error::Auth("authorization: malformed Credential, SignedHeaders or Signature");
  }
  out.access_key_id = scope[0];
  out.day = scope[1];
  out.region = scope[2];
  out.service = scope[3];
  return out;
}

}  // namespace gpuscaler::cloud
