#include "gpuscaler/cloud/gcp_credentials.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"
#include "credential_cache.h"
#include "jwt_rs256.h"

namespace gpuscaler::cloud {
namespace {

// Lifetime of a signed assertion (Google accepts at most one hour).
constexpr Seconds kAssertionLifetime{3600};
constexpr const char* kDefaultTokenUri = "https://oauth2.googleapis.com/token";

std::string EnvValue(const Environment& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

// An OAuth error answer: {"error": "invalid_grant", "error_description": "…"}.
// 400 and 401 are the credentials' fault (kAuth); 429 and 5xx pass.
Error TokenEndpointError(std::string_view source, int status, std::string_view body) {
  std::string detail;
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const std::string code = StringAt(j, "error");
    const std::string description = StringAt(j, "error_description");
    detail = code;
    if (!description.empty()) detail += (detail.empty() ? "" : ": ") + description;
  }
  std::string message = std::string(source) + ": HTTP " + std::to_string(status);
  if (!detail.empty()) message += " (" + detail + ")";
  if (status == 429 || status >= 500) return Error::Transient(message);
  return Error::Auth(message);
}

struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

std::string ScrubSecrets(std::string text, const std::vector<std::string_view>& secrets) {
  constexpr size_t kMinSecret = 8;  // shorter strings are words, not secrets
  constexpr std::string_view kMark = "[redacted]";
  for (std::string_view secret : secrets) {
    if (secret.size() < kMinSecret) continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + kMark.size())) {
      text.replace(at, secret.size(), kMark);
    }
  }
  return text;
}

std::string AccessToken::Redacted() const { return std::string("Bearer … expires=") + FormatRfc3339(expiry); }

Result<GoogleCredentialsFile> ParseGoogleCredentialsFile(std::string_view json, const std::string& path) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::Auth(path + ": not a JSON object (a Google credentials file)");
  GoogleCredentialsFile f;
  f.type = StringAt(j, "type");
  f.client_email = StringAt(j, "client_email");
  f.private_key = StringAt(j, "private_key");
  f.private_key_id = StringAt(j, "private_key_id");
  f.project_id = StringAt(j, "project_id");
  f.client_id = StringAt(j, "client_id");
  f.client_secret = StringAt(j, "client_secret");
  f.refresh_token = StringAt(j, "refresh_token");
  f.token_uri = StringAt(j, "token_uri");
  if (f.token_uri.empty()) f.token_uri = kDefaultTokenUri;
  auto need = [&](const std::string& value, const char* field) -> Status {
    if (value.empty()) return Error::Auth(path + ": " + f.type + " credentials without \"" + field + "\"");
    return Status::Ok();
  };
  if (f.type == "service_account") {
    for (Status s : {need(f.client_email, "client_email"), need(f.private_key, "private_key")}) {
      if (!s.ok()) return s.error();
    }
  } else if (f.type == "authorized_user") {
    for (Status s : {need(f.client_id, "client_id"), need(f.client_secret, "client_secret"),
                     need(f.refresh_token, "refresh_token")}) {
      if (!s.ok()) return s.error();
    }
  } else {
    return Error::Auth(path + ": credentials type '" + f.type +
                       "' is not supported (service_account or authorized_user)");
  }
  if (f.token_uri.rfind("http://", 0) != 0 && f.token_uri.rfind("https://", 0) != 0)
    return Error::Auth(path + ": token_uri is not an http(s) URL");
  return f;
}

std::optional<std::string> Base64UrlDecode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  };
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

Result<std::string> SignRs256Jwt(const nlohmann::json& header, const nlohmann::json& claims,
                                 std::string_view pem_private_key, std::string_view who) {
  const std::string signing_input = Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(claims.dump());
  std::unique_ptr<BIO, BioDeleter> bio(
      BIO_new_mem_buf(pem_private_key.data(), static_cast<int>(pem_private_key.size())));
  std::unique_ptr<EVP_PKEY, PkeyDeleter> pkey(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!pkey || EVP_PKEY_base_id(pkey.get()) != EVP_PKEY_RSA) {
    return Error::Auth(std::string(who) + ": the private key is not a PEM RSA private key");
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, pkey.get()) != 1 ||
      EVP_DigestSignUpdate(ctx.get(), signing_input.data(), signing_input.size()) != 1 ||
      EVP_DigestSignFinal(ctx.get(), nullptr, &length) != 1) {
    return Error::Auth(std::string(who) + ": signing the JWT assertion failed");
  }
  std::string signature(length, '\0');
  if (EVP_DigestSignFinal(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length) != 1) {
    return Error::Auth(std::string(who) + ": signing the JWT assertion failed");
  }
  signature.resize(length);
  return signing_input + "." + Base64UrlEncode(signature);
}

Result<std::string> SignJwtAssertion(const GoogleCredentialsFile& key, std::string_view scope, WallTime now) {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key.private_key_id.empty()) header["kid"] = key.private_key_id;
  const nlohmann::json claims = {{"iss", key.client_email},
                                 {"scope", std::string(scope)},
                                 {"aud", key.token_uri},
                                 {"iat", ToUnixSeconds(now)},
                                 {"exp", ToUnixSeconds(now + kAssertionLifetime)}};
  return SignRs256Jwt(header, claims, key.private_key, "service account " + key.client_email);
}

Result<AccessToken> ParseTokenResponse(std::string_view json, WallTime now, std::string_view source) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::Auth(std::string(source) + ": the token answer is not a JSON object");
  AccessToken t;
  t.token = StringAt(j, "access_token");
  const int64_t expires_in = IntAt(j, "expires_in", -1);
  const std::string type = StringAt(j, "token_type");
  if (t.token.empty() || expires_in <= 0) {
    return Error::Auth(std::string(source) + ": the token answer lacks access_token or expires_in");
  }
  if (!type.empty() && !EqualsIgnoreCase(type, "Bearer")) {
    return Error::Auth(std::string(source) + ": token_type '" + type + "' is not Bearer");
  }
  t.expiry = now + Seconds(expires_in);
  return t;
}

KeyFileTokenSource::KeyFileTokenSource(GoogleCredentialsFile key, std::string path, std::string scope,
                                       Transport& transport)
    : key_(std::move(key)), path_(std::move(path)), scope_(std::move(scope)), transport_(transport) {}

std::string KeyFileTokenSource::Name() const {
  return (key_.type == "service_account" ? "service account key " : "authorized user file ") + path_;
}

int CachedTokenSource::refreshes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refreshes_;
}

Result<AccessToken> CachedTokenSource::Get(WallTime now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Fresh(cached_, now)) return *cached_;
  return KeepFetched(cached_, Fetch(now), now, &refreshes_);
}

Result<AccessToken> KeyFileTokenSource::Fetch(WallTime now) {
  QueryParams form;
  if (key_.type == "service_account") {
    Result<std::string> assertion = SignJwtAssertion(key_, scope_, now);
    if (!assertion) return assertion.error().WithContext(path_);
    form = {{"grant_type", kJwtBearerGrant}, {"assertion", *assertion}};
  } else {
    form = {{"grant_type", "refresh_token"},
            {"client_id", key_.client_id},
            {"client_secret", key_.client_secret},
            {"refresh_token", key_.refresh_token}};
  }
  const std::string source = Name() + ": token_uri " + key_.token_uri;
  auto resp = transport_.Send(
      {"POST", key_.token_uri, {{"Content-Type", "application/x-www-form-urlencoded"}}, EncodeForm(form)});
  Result<AccessToken> fresh = Error::Internal("unset");
  if (!resp) {
    fresh = Error::Transient(source + ": " + resp.error().message());
  } else if (resp->status != 200) {
    // The answer is quoted: whatever of the request it echoes is taken out
    // (the assertion, any of its parts, the refresh token, the secret).
    std::vector<std::string_view> sent;
    for (const auto& [key, value] : form) {
      if (key == "grant_type" || key == "client_id") continue;
      sent.push_back(value);
      if (key == "assertion") {
        for (std::string_view part : Split(value, '.')) sent.push_back(part);
      }
    }
    const Error e = TokenEndpointError(source, resp->status, resp->body);
    fresh = Error(e.category(), ScrubSecrets(e.message(), sent));
  } else {
    fresh = ParseTokenResponse(resp->body, now, source);
  }
  return fresh;
}

MetadataTokenSource::MetadataTokenSource(std::string host, std::string scope, Transport& transport)
    : host_(std::move(host)), scope_(std::move(scope)), transport_(transport) {}

Result<AccessToken> MetadataTokenSource::Fetch(WallTime now) {
  // OAuth's scope is space-separated; the metadata server's `scopes` is a
  // comma-separated list.
  std::string scopes = scope_;
  std::replace(scopes.begin(), scopes.end(), ' ', ',');
  const std::string url = "http://" + host_ +
                          "/computeMetadata/v1/instance/service-accounts/default/token?scopes=" +
                          EncodeForm({{"s", scopes}}).substr(2);
  const std::string source = Name();
  auto resp = transport_.Send({"GET", url, {{"Metadata-Flavor", "Google"}}, ""});
  Result<AccessToken> fresh = Error::Internal("unset");
  if (!resp) {
    // No metadata server: not on Google Cloud (the chain reports it).
    fresh = Error::NotFound(source + ": " + resp.error().message());
  } else if (resp->status == 404) {
    fresh = Error::NotFound(source + ": no default service account (HTTP 404)");
  } else if (resp->status != 200) {
    fresh = TokenEndpointError(source, resp->status, resp->body);
  } else {
    fresh = ParseTokenResponse(resp->body, now, source);
  }
  return fresh;
}

namespace {

std::string WellKnownFile(const Environment& env) {
  std::string dir = EnvValue(env, "CLOUDSDK_CONFIG");
  if (dir.empty()) {
    const std::string home = EnvValue(env, "HOME");
    if (home.empty()) return "";
    dir = home + "/.config/gcloud";
  }
  return dir + "/application_default_credentials.json";
}

}  // namespace

Result<std::unique_ptr<TokenSource>> DefaultTokenSource(const Environment& env, Transport& transport,
                                                        const FileReader& read_file, std::string scope) {
  auto from_file = [&](const std::string& path,
                       const std::string& via) -> Result<std::unique_ptr<TokenSource>> {
    Result<std::string> text = read_file(path);
    if (!text) return Error::Auth(via + ": reading " + path + ": " + text.error().message());
    Result<GoogleCredentialsFile> key = ParseGoogleCredentialsFile(*text, path);
    if (!key) return key.error().WithContext(via);
    return std::unique_ptr<TokenSource>(
        std::make_unique<KeyFileTokenSource>(std::move(key).value(), path, scope, transport));
  };
  if (const std::string path = EnvValue(env, "GOOGLE_APPLICATION_CREDENTIALS"); !path.empty()) {
    return from_file(path, "GOOGLE_APPLICATION_CREDENTIALS");
  }
  if (const std::string path = WellKnownFile(env); !path.empty() && read_file(path).ok()) {
    return from_file(path, "gcloud application default credentials");
  }
  if (EqualsIgnoreCase(EnvValue(env, "NO_GCE_CHECK"), "true")) {
    return Error::Auth(
        "no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, there is no gcloud application "
        "default "
        "credentials file, and NO_GCE_CHECK=true rules out the metadata server");
  }
  std::string host = EnvValue(env, "GCE_METADATA_HOST");
  if (host.empty()) host = "metadata.google.internal";
  while (!host.empty() && host.back() == '/') host.pop_back();
  return std::unique_ptr<TokenSource>(std::make_unique<MetadataTokenSource>(host, scope, transport));
}

std::string ProjectFromCredentials(const Environment& env, const FileReader& read_file) {
  std::string path = EnvValue(env, "GOOGLE_APPLICATION_CREDENTIALS");
  if (path.empty()) path = WellKnownFile(env);
  if (path.empty()) return "";
  Result<std::string> text = read_file(path);
  if (!text) return "";
  Result<GoogleCredentialsFile> key = ParseGoogleCredentialsFile(*text, path);
  return key ? key->project_id : "";
}

}  // namespace gpuscaler::cloud
