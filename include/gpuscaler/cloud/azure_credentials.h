// Azure credentials: Microsoft Entra ID access tokens for Azure Resource
// Manager (audience https://management.azure.com/), from one of four sources:
//   - workload identity, as AKS injects it into a pod whose service account
//     is labelled azure.workload.identity/use: AZURE_FEDERATED_TOKEN_FILE
//     (the projected service account token, re-read on every exchange since
//     the kubelet rotates it), AZURE_CLIENT_ID, AZURE_TENANT_ID and
//     AZURE_AUTHORITY_HOST. The token is POSTed as client_assertion
//     (client_assertion_type urn:ietf:params:oauth:client-assertion-type:
//     jwt-bearer) to {authority}/{tenant}/oauth2/v2.0/token with grant_type
//     client_credentials and scope https://management.azure.com/.default;
//   - managed identity, from the Instance Metadata Service: GET
//     {imds}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=
//     https://management.azure.com/ (&client_id=… for a user-assigned
//     identity) with the header Metadata: true;
//   - a client secret (an app registration's), POSTed as client_secret to the
//     same token endpoint as workload identity;
//   - a client certificate: a JWT client assertion signed RS256 by the
//     certificate's private key, its header carrying the certificate's
//     thumbprints x5t#S256 (SHA-256 of the DER certificate, base64url) and
//     x5t (SHA-1), its claims aud = the token endpoint, iss = sub = the
//     client id, a unique jti, nbf, iat and exp (10 minutes).
//
// Tokens are cached and fetched again five minutes before they expire
// (credential_cache.h); a failed refresh keeps answering a token that has
// not expired. Secrets never leave this module as text: errors name the
// source (file, variable, endpoint), the HTTP status and the Entra error
// code (AADSTS…), with anything the peer echoes of what was sent taken out;
// AccessToken::Redacted() is the only printable form of a token. Every token
// source is thread-safe (CachedTokenSource).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/gcp_credentials.h"
#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kAzureAuthorityHost = "https://login.microsoftonline.com/";
inline constexpr const char* kAzureImdsEndpoint = "http://169.254.169.254";
// The ARM audience: as a v2 scope (Entra ID) and as a v1 resource (IMDS).
inline constexpr const char* kAzureManagementScope = "https://management.azure.com/.default";
inline constexpr const char* kAzureManagementResource = "https://management.azure.com/";
inline constexpr const char* kClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

enum class AzureCredentialKind {
  kAuto,               // workload identity when AZURE_FEDERATED_TOKEN_FILE is set, else managed identity
  kWorkloadIdentity,   // the AZURE_* variables AKS injects
  kManagedIdentity,    // IMDS
  kClientSecret,       // tenant_id, client_id, client_secret_file
  kClientCertificate,  // tenant_id, client_id, certificate_file (PEM: certificate and private key)
};

// "auto", "workload_identity", "managed_identity", "client_secret",
// "client_certificate"; nullopt otherwise.
std::optional<AzureCredentialKind> ParseAzureCredentialKind(std::string_view text);

struct AzureCredentialOptions {
  AzureCredentialKind kind = AzureCredentialKind::kAuto;
  // Empty: AZURE_TENANT_ID / AZURE_CLIENT_ID. Managed identity: client_id
  // picks a user-assigned identity (empty: the system-assigned one).
  std::string tenant_id;
  std::string client_id;
  std::string client_secret_file;  // kClientSecret: a file holding the secret
  std::string certificate_file;    // kClientCertificate: PEM with the certificate and its RSA key
  // Empty: AZURE_AUTHORITY_HOST, else kAzureAuthorityHost. An emulator's URL.
  std::string authority_host;
  // Empty: kAzureImdsEndpoint. An emulator's URL.
  std::string imds_endpoint;
};

// The Entra ID token endpoint: "{authority}/{tenant}/oauth2/v2.0/token".
std::string AzureTokenEndpoint(std::string_view authority_host, std::string_view tenant_id);

// The Entra ID (and IMDS) token answer. Entra gives expires_in as a number,
// IMDS as a string ("86399"); both are taken. kAuth naming `source` when
// access_token or expires_in is missing.
Result<AccessToken> ParseAzureTokenResponse(std::string_view json, WallTime now, std::string_view source);

// The client-credentials exchange at an Entra ID token endpoint, with one
// of three proofs (workload identity, secret, certificate).
class EntraTokenSource final : public CachedTokenSource {
 public:
  enum class Proof { kFederatedTokenFile, kSecret, kCertificate };
  // `proof_source`: the federated token file's path (read with `read_file`
  // on each exchange), the secret itself, or the certificate PEM (certificate
  // and private key). `name` names the source in messages ("workload
  // identity", "client secret file /etc/…").
  EntraTokenSource(Proof proof, std::string token_endpoint, std::string client_id, std::string proof_source,
                   std::string name, Transport& transport, FileReader read_file);
  std::string Name() const override { return name_; }

  // The certificate's client assertion (exposed for tests): kAuth when the
  // PEM holds no certificate or no RSA key.
  Result<std::string> CertificateAssertion(WallTime now) const;

 protected:
  Result<AccessToken> Fetch(WallTime now) override;

 private:
  const Proof proof_;
  const std::string token_endpoint_;
  const std::string client_id_;
  const std::string proof_source_;
  const std::string name_;
  Transport& transport_;
  const FileReader read_file_;
  mutable uint64_t assertions_ = 0;  // for unique jti values
};

// The managed identity's token from IMDS (or an emulator of it).
class ManagedIdentityTokenSource final : public CachedTokenSource {
 public:
  ManagedIdentityTokenSource(std::string imds_endpoint, std::string client_id, Transport& transport);
  std::string Name() const override;

 protected:
  Result<AccessToken> Fetch(WallTime now) override;

 private:
  const std::string endpoint_;
  const std::string client_id_;
  Transport& transport_;
};

// The token source `options` and `env` select. kConfig naming what is
// missing (a variable, a field) when the chosen kind cannot be built; kAuth
// when the secret or certificate file cannot be read. Tokens themselves are
// fetched on the first Get. `transport` must outlive the source.
Result<std::unique_ptr<TokenSource>> MakeAzureTokenSource(const AzureCredentialOptions& options,
                                                          const Environment& env, Transport& transport,
                                                          const FileReader& read_file);

}  // namespace gpuscaler::cloud
