// Wire helpers of the Compute Engine emulator: error bodies, query strings,
// list filters and paging, and the JWT primitives (base64url, RS256).
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/sigv4.h"
#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim::gcp {

std::string RegionOf(const std::string& zone) {
  const size_t dash = zone.rfind('-');
  return dash == std::string::npos ? zone : zone.substr(0, dash);
}

EmulatorResponse ErrorResponse(int status, const std::string& reason, const std::string& message,
                               const std::string& domain) {
  // The google.rpc status names Google's JSON errors carry next to the code.
  const char* rpc = "UNKNOWN";
  switch (status) {
    case 400:
      rpc = "INVALID_ARGUMENT";
      break;
    case 401:
      rpc = "UNAUTHENTICATED";
      break;
    case 403:
      rpc = "PERMISSION_DENIED";
      break;
    case 404:
      rpc = "NOT_FOUND";
      break;
    case 409:
      rpc = "ALREADY_EXISTS";
      break;
    case 429:
      rpc = "RESOURCE_EXHAUSTED";
      break;
    case 500:
      rpc = "INTERNAL";
      break;
    case 503:
      rpc = "UNAVAILABLE";
      break;
    default:
      break;
  }
  nlohmann::json body = {{"error",
                          {{"code", status},
                           {"message", message},
                           {"errors", {{{"message", message}, {"domain", domain}, {"reason", reason}}}},
                           {"status", rpc}}}};
  EmulatorResponse r{status, "application/json; charset=UTF-8", {}, body.dump()};
  if (status == 401)
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
  return r;
}

EmulatorResponse Json(const std::string& body) { return {200, "application/json; charset=UTF-8", {}, body}; }

EmulatorResponse NotFound(const std::string& resource) {
  return ErrorResponse(404, "notFound", "The resource '" + resource + "' was not found");
}

EmulatorResponse Invalid(const std::string& field, const std::string& value, const std::string& why) {
  return ErrorResponse(400, "invalid", "Invalid value for field '" + field + "': '" + value + "'. " + why);
}

std::string LastSegment(const std::string& s) {
  const size_t slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

bool ValidUuid(const std::string& s) {
  if (s.size() != 36) return false;
  bool nonzero = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    } else if (s[i] != '0') {
      nonzero = true;
    }
  }
  return nonzero;
}

bool ValidName(const std::string& n) {
  if (n.empty() || n.size() > 63 || n[0] < 'a' || n[0] > 'z' || n.back() == '-') return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

std::string Timestamp(WallTime t) {
  std::string s = FormatRfc3339(t);  // "…T10:00:00Z"
  if (!s.empty() && s.back() == 'Z') s.replace(s.size() - 1, 1, ".000-00:00");
  return s;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key(pair.substr(0, eq));
    std::string value(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    for (char& c : key) c = c == '+' ? ' ' : c;
    for (char& c : value) c = c == '+' ? ' ' : c;
    out[cloud::UriDecode(key)] = cloud::UriDecode(value);
  }
  return out;
}

namespace {

void SkipSpace(const std::string& s, size_t* i) {
  while (*i < s.size() && std::isspace(static_cast<unsigned char>(s[*i]))) ++*i;
}

bool WordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '*' ||
         c == '/';
}

}  // namespace

std::optional<Filter> Filter::Parse(const std::string& text, std::string* error) {
  Filter f;
  size_t i = 0;
  auto fail = [&](const std::string& why) -> std::optional<Filter> {
    *error = "Invalid value for field 'filter': '" + text + "'. " + why;
    return std::nullopt;
  };
  while (true) {
    SkipSpace(text, &i);
    if (i >= text.size()) break;
    bool paren = false;
    if (text[i] == '(') {
      paren = true;
      ++i;
      SkipSpace(text, &i);
    }
    Term t;
    while (i < text.size() && WordChar(text[i])) t.field += text[i++];
    if (t.field.empty()) return fail("Expected a field name at offset " + std::to_string(i) + ".");
    if (t.field == "OR" || t.field == "NOT") return fail("OR and NOT are not supported by this emulator.");
    SkipSpace(text, &i);
    if (text.compare(i, 2, "!=") == 0) {
      t.op = "!=";
      i += 2;
    } else if (i < text.size() && (text[i] == '=' || text[i] == ':')) {
      t.op = std::string(1, text[i++]);
    } else {
      return fail("Expected =, != or : after '" + t.field + "'.");
    }
    SkipSpace(text, &i);
    if (i < text.size() && text[i] == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          t.value += text[i + 1];
          i += 2;
        } else if (text[i] == '"') {
          ++i;
          closed = true;
          break;
        } else {
          t.value += text[i++];
        }
      }
      if (!closed) return fail("Unterminated string.");
    } else {
      while (i < text.size() && WordChar(text[i])) t.value += text[i++];
      if (t.value.empty()) return fail("Expected a value after '" + t.field + " " + t.op + "'.");
    }
    SkipSpace(text, &i);
    if (paren) {
      if (i >= text.size() || text[i] != ')') return fail("Expected ')'.");
      ++i;
    }
    f.terms_.push_back(std::move(t));
    SkipSpace(text, &i);
    if (text.compare(i, 3, "AND") == 0 && (i + 3 == text.size() || !WordChar(text[i + 3]))) i += 3;
  }
  return f;
}

bool Filter::Matches(const std::function<std::optional<std::string>(const std::string&)>& field) const {
  for (const Term& t : terms_) {
    const std::optional<std::string> v = field(t.field);
    if (t.op == ":") {
      // "has": the field exists (value "*") or equals the value.
      if (!v || (t.value != "*" && *v != t.value)) return false;
      continue;
    }
    bool eq = false;
    if (v) {
      if (!t.value.empty() && t.value.back() == '*') {
        eq = v->compare(0, t.value.size() - 1, t.value, 0, t.value.size() - 1) == 0;
      } else {
        eq = *v == t.value;
      }
    }
    if ((t.op == "=") != eq) return false;
  }
  return true;
}

std::optional<EmulatorResponse> ParseListQuery(const std::map<std::string, std::string>& q, ListQuery* out) {
  *out = ListQuery{};
  size_t* offset = &out->offset;
  size_t* max_results = &out->max_results;
  if (auto f = q.find("filter"); f != q.end() && !f->second.empty()) {
    std::string error;
    out->filter = Filter::Parse(f->second, &error);
    if (!out->filter) return ErrorResponse(400, "invalid", error);
  }
  if (auto m = q.find("maxResults"); m != q.end()) {
    char* end = nullptr;
    const long v = std::strtol(m->second.c_str(), &end, 10);
    if (m->second.empty() || *end != '\0' || v < 0 || v > 500) {
      return ErrorResponse(400, "invalid",
                           "Invalid value for field 'maxResults': '" + m->second + "'. Must be in [0, 500].");
    }
    if (v > 0) *max_results = static_cast<size_t>(v);
  }
  if (auto p = q.find("pageToken"); p != q.end() && !p->second.empty()) {
    // Our tokens are "o" + the offset; anything else was not handed out by us.
    char* end = nullptr;
    const long long v = p->second[0] == 'o' ? std::strtoll(p->second.c_str() + 1, &end, 10) : -1;
    if (v < 0 || end == nullptr || *end != '\0') {
      return ErrorResponse(400, "invalid", "Invalid value for field 'pageToken': '" + p->second + "'.");
    }
    *offset = static_cast<size_t>(v);
  }
  return std::nullopt;
}

std::string PageToken(size_t offset) {
  std::string token = "o";
  token += std::to_string(offset);
  return token;
}

std::optional<std::string> Base64UrlDecode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '-')
      v = 62;
    else if (c == '_')
      v = 63;
    else if (c == '=')
      break;
    else
      return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return std::nullopt;  // a lone trailing character carries no byte
  return out;
}

Status VerifyRs256(const std::string& public_key_pem, std::string_view data, std::string_view signature) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(public_key_pem.data(), static_cast<int>(public_key_pem.size())), &BIO_free);
  if (!bio) return Error::Internal("BIO_new_mem_buf failed");
  EVP_PKEY* raw = nullptr;
  if (public_key_pem.find("BEGIN CERTIFICATE") != std::string::npos) {
    std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr),
                                                     &X509_free);
    if (cert) raw = X509_get_pubkey(cert.get());
  } else {
    raw = PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  }
  if (raw == nullptr)
    return Error::Config("the service account's public key is not a PEM public key or certificate");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(raw, &EVP_PKEY_free);
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA)
    return Error::Config("the service account's key is not RSA");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1) {
    return Error::Internal("EVP_DigestVerifyInit failed");
  }
  const int ok =
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char*>(data.data()), data.size());
  if (ok != 1) return Error::Auth("Invalid JWT Signature.");
  return Status();
}

}  // namespace gpuscaler::sim::gcp
