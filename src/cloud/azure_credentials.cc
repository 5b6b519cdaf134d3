#include "gpuscaler/cloud/azure_credentials.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"
#include "jwt_rs256.h"

namespace gpuscaler::cloud {
namespace {

// Entra ID accepts client assertions valid for at most ten minutes.
constexpr Seconds kAzureAssertionLifetime{600};

std::string AzureEnv(const Environment& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// {"error": "invalid_client", "error_description": "AADSTS7000215: …"}:
// the code and the AADSTS number, never the description's quotes of the
// request. 400 and 401 are the credentials' fault; 429 and 5xx pass.
Error EntraError(std::string_view source, int status, std::string_view body) {
  std::string detail;
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    detail = StringAt(j, "error");
    const std::string description = StringAt(j, "error_description");
    if (!description.empty()) detail += (detail.empty() ? "" : ": ") + description.substr(0, 200);
  }
  std::string message = std::string(source) + ": HTTP " + std::to_string(status);
  if (!detail.empty()) message += " (" + detail + ")";
  if (status == 429 || status >= 500) return Error::Transient(message);
  return Error::Auth(message);
}

struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct AzureBioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};

std::string CertificateDigest(const EVP_MD* md, const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out, &length, md, nullptr) != 1) return "";
  return std::string(reinterpret_cast<char*>(out), length);
}

}  // namespace

std::optional<AzureCredentialKind> ParseAzureCredentialKind(std::string_view text) {
  if (text == "auto") return AzureCredentialKind::kAuto;
  if (text == "workload_identity") return AzureCredentialKind::kWorkloadIdentity;
  if (text == "managed_identity") return AzureCredentialKind::kManagedIdentity;
  if (text == "client_secret") return AzureCredentialKind::kClientSecret;
  if (text == "client_certificate") return AzureCredentialKind::kClientCertificate;
  return std::nullopt;
}

std::string AzureTokenEndpoint(std::string_view authority_host, std::string_view tenant_id) {
  return WithoutTrailingSlash(std::string(authority_host)) + "/" + std::string(tenant_id) + "/oauth2/v2.0/token";
}

Result<AccessToken> ParseAzureTokenResponse(std::string_view json, WallTime now, std::string_view source) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::Auth(std::string(source) + ": the token answer is not a JSON object");
  AccessToken t;
  t.token = StringAt(j, "access_token");
  int64_t expires_in = -1;
  if (auto it = j.find("expires_in"); it != j.end()) {
    if (it->is_number_integer()) {
      expires_in = it->get<int64_t>();
    } else if (it->is_string()) {
      const std::string text = it->get<std::string>();
      if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() < 12)
        expires_in = std::stoll(text);
    }
  }
  const std::string type = StringAt(j, "token_type");
  if (t.token.empty() || expires_in <= 0)
    return Error::Auth(std::string(source) + ": the token answer lacks access_token or expires_in");
  if (!type.empty() && !EqualsIgnoreCase(type, "Bearer"))
    return Error::Auth(std::string(source) + ": token_type '" + type + "' is not Bearer");
  t.expiry = now + Seconds(expires_in);
  return t;
}

EntraTokenSource::EntraTokenSource(Proof proof, std::string token_endpoint, std::string client_id,
                                   std::string proof_source, std::string name, Transport& transport,
                                   FileReader read_file)
    : proof_(proof),
      token_endpoint_(std::move(token_endpoint)),
      client_id_(std::move(client_id)),
      proof_source_(std::move(proof_source)),
      name_(std::move(name)),
      transport_(transport),
      read_file_(std::move(read_file)) {}

Result<std::string> EntraTokenSource::CertificateAssertion(WallTime now) const {
  std::unique_ptr<BIO, AzureBioDeleter> bio(
      BIO_new_mem_buf(proof_source_.data(), static_cast<int>(proof_source_.size())));
  std::unique_ptr<X509, X509Deleter> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) return Error::Auth(name_ + ": no PEM certificate found");
  unsigned char* der = nullptr;
  const int der_length = i2d_X509(cert.get(), &der);
  if (der_length <= 0) return Error::Auth(name_ + ": the certificate does not encode");
  const std::string der_bytes(reinterpret_cast<char*>(der), static_cast<size_t>(der_length));
  OPENSSL_free(der);
  const nlohmann::json header = {{"alg", "RS256"},
                                 {"typ", "JWT"},
                                 {"x5t#S256", Base64UrlEncode(CertificateDigest(EVP_sha256(), der_bytes))},
                                 {"x5t", Base64UrlEncode(CertificateDigest(EVP_sha1(), der_bytes))}};
  // jti: unique per assertion (Entra ID refuses a replayed one).
  const std::string jti = Sha256Hex(client_id_ + "/" + std::to_string(ToUnixSeconds(now)) + "/" +
                                    std::to_string(++assertions_) + "/" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  const nlohmann::json claims = {{"aud", token_endpoint_},
                                 {"iss", client_id_},
                                 {"sub", client_id_},
                                 {"jti", jti.substr(0, 32)},
                                 {"nbf", ToUnixSeconds(now)},
                                 {"iat", ToUnixSeconds(now)},
                                 {"exp", ToUnixSeconds(now + kAzureAssertionLifetime)}};
  return SignRs256Jwt(header, claims, proof_source_, name_);
}

Result<AccessToken> EntraTokenSource::Fetch(WallTime now) {
  QueryParams form = {{"grant_type", "client_credentials"},
                      {"client_id", client_id_},
                      {"scope", kAzureManagementScope}};
  std::string secret;  // what the form carries that must never be quoted
  switch (proof_) {
    case Proof::kFederatedTokenFile: {
      Result<std::string> token = read_file_(proof_source_);
      if (!token) return Error::Auth(name_ + ": reading the federated token file " + proof_source_ + " failed");
      secret = std::string(Trim(*token));
      if (secret.empty()) return Error::Auth(name_ + ": the federated token file " + proof_source_ + " is empty");
      form.push_back({"client_assertion_type", kClientAssertionType});
      form.push_back({"client_assertion", secret});
      break;
    }
    case Proof::kSecret:
      secret = proof_source_;
      form.push_back({"client_secret", secret});
      break;
    case Proof::kCertificate: {
      Result<std::string> assertion = CertificateAssertion(now);
      if (!assertion) return assertion.error();
      secret = *assertion;
      form.push_back({"client_assertion_type", kClientAssertionType});
      form.push_back({"client_assertion", secret});
      break;
    }
  }
  const std::string source = name_ + ": token endpoint " + token_endpoint_;
  auto resp = transport_.Send(
      {"POST", token_endpoint_, {{"Content-Type", "application/x-www-form-urlencoded"}}, EncodeForm(form)});
  if (!resp) return Error::Transient(source + ": " + resp.error().message());
  if (resp->status != 200) {
    std::vector<std::string_view> sent = {secret};
    for (std::string_view part : Split(secret, '.')) sent.push_back(part);
    const Error e = EntraError(source, resp->status, resp->body);
    return Error(e.category(), ScrubSecrets(e.message(), sent));
  }
  return ParseAzureTokenResponse(resp->body, now, source);
}

ManagedIdentityTokenSource::ManagedIdentityTokenSource(std::string imds_endpoint, std::string client_id,
                                                       Transport& transport)
    : endpoint_(WithoutTrailingSlash(std::move(imds_endpoint))),
      client_id_(std::move(client_id)),
      transport_(transport) {}

std::string ManagedIdentityTokenSource::Name() const {
  return "managed identity" + (client_id_.empty() ? std::string() : " " + client_id_) + " at " + endpoint_;
}

Result<AccessToken> ManagedIdentityTokenSource::Fetch(WallTime now) {
  QueryParams query = {{"api-version", "2018-02-01"}, {"resource", kAzureManagementResource}};
  if (!client_id_.empty()) query.push_back({"client_id", client_id_});
  const std::string url = endpoint_ + "/metadata/identity/oauth2/token?" + EncodeForm(query);
  const std::string source = Name();
  auto resp = transport_.Send({"GET", url, {{"Metadata", "true"}}, ""});
  if (!resp) return Error::Transient(source + ": " + resp.error().message());
  // IMDS answers 400 when the VM has no such identity, 404 while an
  // identity is being assigned, 410 while IMDS itself starts.
  if (resp->status == 404 || resp->status == 410) return Error::Transient(source + ": HTTP " + std::to_string(resp->status));
  if (resp->status != 200) return EntraError(source, resp->status, resp->body);
  return ParseAzureTokenResponse(resp->body, now, source);
}

Result<std::unique_ptr<TokenSource>> MakeAzureTokenSource(const AzureCredentialOptions& options,
                                                          const Environment& env, Transport& transport,
                                                          const FileReader& read_file) {
  auto pick = [&](const std::string& given, const char* variable) {
    return given.empty() ? AzureEnv(env, variable) : given;
  };
  const std::string tenant = pick(options.tenant_id, "AZURE_TENANT_ID");
  const std::string client = pick(options.client_id, "AZURE_CLIENT_ID");
  std::string authority = pick(options.authority_host, "AZURE_AUTHORITY_HOST");
  if (authority.empty()) authority = kAzureAuthorityHost;
  AzureCredentialKind kind = options.kind;
  if (kind == AzureCredentialKind::kAuto) {
    kind = AzureEnv(env, "AZURE_FEDERATED_TOKEN_FILE").empty() ? AzureCredentialKind::kManagedIdentity
                                                               : AzureCredentialKind::kWorkloadIdentity;
  }
  auto need = [&](const std::string& value, const std::string& what) -> Status {
    if (value.empty()) return Error::Config("azure credentials: " + what + " is not set");
    return Status::Ok();
  };
  using Proof = EntraTokenSource::Proof;
  auto entra = [&](Proof proof, std::string proof_source, std::string name) -> Result<std::unique_ptr<TokenSource>> {
    for (Status s : {need(tenant, "the tenant id (tenant_id or AZURE_TENANT_ID)"),
                     need(client, "the client id (client_id or AZURE_CLIENT_ID)")}) {
      if (!s.ok()) return s.error();
    }
    return std::unique_ptr<TokenSource>(std::make_unique<EntraTokenSource>(
        proof, AzureTokenEndpoint(authority, tenant), client, std::move(proof_source), std::move(name), transport,
        read_file));
  };
  switch (kind) {
    case AzureCredentialKind::kWorkloadIdentity: {
      const std::string file = AzureEnv(env, "AZURE_FEDERATED_TOKEN_FILE");
      if (Status s = need(file, "AZURE_FEDERATED_TOKEN_FILE (workload identity)"); !s.ok()) return s.error();
      return entra(Proof::kFederatedTokenFile, file, "workload identity " + client);
    }
    case AzureCredentialKind::kClientSecret: {
      if (Status s = need(options.client_secret_file, "client_secret_file"); !s.ok()) return s.error();
      Result<std::string> secret = read_file(options.client_secret_file);
      if (!secret) return Error::Auth("azure credentials: reading client_secret_file " + options.client_secret_file + " failed");
      const std::string trimmed(Trim(*secret));
      if (trimmed.empty()) return Error::Auth("azure credentials: client_secret_file " + options.client_secret_file + " is empty");
      return entra(Proof::kSecret, trimmed, "client secret file " + options.client_secret_file);
    }
    case AzureCredentialKind::kClientCertificate: {
      if (Status s = need(options.certificate_file, "certificate_file"); !s.ok()) return s.error();
      Result<std::string> pem = read_file(options.certificate_file);
      if (!pem) return Error::Auth("azure credentials: reading certificate_file " + options.certificate_file + " failed");
      return entra(Proof::kCertificate, *pem, "client certificate " + options.certificate_file);
    }
    case AzureCredentialKind::kManagedIdentity:
    case AzureCredentialKind::kAuto:
      break;
  }
  const std::string imds = options.imds_endpoint.empty() ? kAzureImdsEndpoint : options.imds_endpoint;
  return std::unique_ptr<TokenSource>(std::make_unique<ManagedIdentityTokenSource>(imds, options.client_id, transport));
}

}  // namespace gpuscaler::cloud
