// Google Cloud credentials: OAuth2 access tokens for the Compute Engine API,
// found in the order Google's client libraries look (Application Default
// Credentials):
//   1. GOOGLE_APPLICATION_CREDENTIALS: a JSON key file. A service-account key
//      ("type": "service_account") signs an RS256 JWT (iss = client_email,
//      scope, aud = the key's token_uri, iat, exp = iat + 1 h) and trades it
//      at the key's token_uri (grant_type
//      urn:ietf:params:oauth:grant-type:jwt-bearer). An "authorized_user"
//      file (gcloud auth application-default login) trades its refresh
//      token there instead;
//   2. gcloud's well-known file ($CLOUDSDK_CONFIG, else
//      $HOME/.config/gcloud, /application_default_credentials.json), read
//      the same way;
//   3. the metadata server (GCE VMs, GKE Workload Identity):
//      GET http://$GCE_METADATA_HOST/computeMetadata/v1/instance/
//      service-accounts/default/token with Metadata-Flavor: Google
//      (GCE_METADATA_HOST unset: metadata.google.internal; NO_GCE_CHECK=true
//      skips it).
//
// Tokens are cached and fetched again five minutes before they expire; a
// failed refresh keeps using a token that has not expired yet. Secrets never
// leave this module as text: errors name the source (file, variable, URL)
// and the HTTP status and OAuth error code, never a key or a token, and
// AccessToken::Redacted() is the only printable form of a token. Every token
// source is thread-safe (one mutex each: concurrent callers wait for one
// refresh).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// The OAuth scope the Compute Engine calls need.
inline constexpr const char* kComputeScope = "https://www.googleapis.com/auth/compute";
inline constexpr const char* kJwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer";

struct AccessToken {
  std::string token;
  WallTime expiry{};
  // "Bearer token expires=2026-…": safe for logs.
  std::string Redacted() const;
};

// A JSON credentials file as Google writes it.
struct GoogleCredentialsFile {
  std::string type;  // "service_account" or "authorized_user"
  // service_account
  std::string client_email;
  std::string private_key;  // PEM, PKCS#8
  std::string private_key_id;
  std::string project_id;
  // authorized_user
  std::string client_id;
  std::string client_secret;
  std::string refresh_token;
  // Both; empty in the file: https://oauth2.googleapis.com/token.
  std::string token_uri;
};

// kAuth naming `path` (never a value) when the JSON is malformed, the type
// is unknown or a field the type needs is missing.
Result<GoogleCredentialsFile> ParseGoogleCredentialsFile(std::string_view json, const std::string& path);

// RFC 4648 §5 without padding, as JWTs use it.
using net::Base64UrlEncode;
// Accepts with or without padding; nullopt on a character outside the alphabet.
std::optional<std::string> Base64UrlDecode(std::string_view text);

// The signed assertion "<header>.<claims>.<signature>": header
// {"alg":"RS256","typ":"JWT","kid":<private_key_id>}, claims {"iss",
// "scope", "aud": token_uri, "iat": now, "exp": now + 3600}. kAuth when the
// key does not load as an RSA private key.
Result<std::string> SignJwtAssertion(const GoogleCredentialsFile& key, std::string_view scope, WallTime now);

// `text` with every occurrence of each secret (those of 8 characters or
// more) replaced by "[redacted]": for messages that quote what a peer
// answered, since a hostile or broken peer may echo what it was sent.
std::string ScrubSecrets(std::string text, const std::vector<std::string_view>& secrets);

// The token endpoint's (and the metadata server's) answer:
// {"access_token", "expires_in", "token_type": "Bearer"}. Its expiry is
// `now` + expires_in.
Result<AccessToken> ParseTokenResponse(std::string_view json, WallTime now, std::string_view source);

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // A token valid at `now` (refreshed when it expires within five minutes).
  // kAuth (rejected), kTransient (no answer, 5xx), kNotFound (this source
  // is absent: the chain tries the next).
  virtual Result<AccessToken> Get(WallTime now) = 0;
  // "service account key /path", "metadata server", …: names, never secrets.
  virtual std::string Name() const = 0;
};

// A source that fetches tokens and caches them: Get answers the cached token
// while it is fresh, fetches a new one otherwise (one caller at a time, so
// concurrent callers share one refresh), and keeps answering the cached
// token while it is unexpired if the fetch fails.
class CachedTokenSource : public TokenSource {
 public:
  Result<AccessToken> Get(WallTime now) final;
  int refreshes() const;

 protected:
  // A new token from the source, valid from `now`.
  virtual Result<AccessToken> Fetch(WallTime now) = 0;

 private:
  mutable std::mutex mu_;
  std::optional<AccessToken> cached_;
  int refreshes_ = 0;
};

// A key file's token, from its token_uri (service account JWT, or
// authorized user refresh token). `path` is only used in messages.
class KeyFileTokenSource final : public CachedTokenSource {
 public:
  KeyFileTokenSource(GoogleCredentialsFile key, std::string path, std::string scope, Transport& transport);
  std::string Name() const override;

 protected:
  Result<AccessToken> Fetch(WallTime now) override;

 private:
  const GoogleCredentialsFile key_;
  const std::string path_;
  const std::string scope_;
  Transport& transport_;
};

// The metadata server's token for the default service account (on GKE with
// Workload Identity: the Kubernetes service account's Google service
// account). `host` is "metadata.google.internal" or "127.0.0.1:8080".
class MetadataTokenSource final : public CachedTokenSource {
 public:
  MetadataTokenSource(std::string host, std::string scope, Transport& transport);
  std::string Name() const override { return "metadata server " + host_; }

 protected:
  Result<AccessToken> Fetch(WallTime now) override;

 private:
  const std::string host_;
  const std::string scope_;
  Transport& transport_;
};

// The Application Default Credentials for `env` (order above). A key file
// named by GOOGLE_APPLICATION_CREDENTIALS that cannot be read or parsed is an
// error (kAuth naming the file), not a reason to fall through to the
// metadata server. `scope`: space-separated OAuth scopes (the metadata
// server is asked for them as its comma-separated `scopes`). `transport`
// must outlive the source.
Result<std::unique_ptr<TokenSource>> DefaultTokenSource(const Environment& env, Transport& transport,
                                                        const FileReader& read_file,
                                                        std::string scope = kComputeScope);

// The project a key file names, for a configuration that names none ("" when
// ADC is not a service-account key).
std::string ProjectFromCredentials(const Environment& env, const FileReader& read_file);

}  // namespace gpuscaler::cloud
