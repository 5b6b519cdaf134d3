// Azure credentials against a fake transport answering as Microsoft Entra
// ID's token endpoint and the Instance Metadata Service do
// (tests/cloud/testdata/azure/*token*.json, entra_error.json).
#include "gpuscaler/cloud/azure_credentials.h"

#include <gtest/gtest.h>
#include <openssl/x509.h>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/text.h"
#include "tests/cloud/azure_fake_arm.h"
#include "tests/cloud/fake_transport.h"
#include "tests/cloud/gcp_test_key.h"

namespace gpuscaler::cloud::azure_credentials_test {
namespace {

using azure_testing::AzureTestData;
using nlohmann::json;
using testing::FakeTransport;

constexpr const char* kTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
constexpr const char* kClient = "6e3d7b1a-0000-0000-0000-000000000000";
constexpr const char* kTokenFile = "/var/run/secrets/azure/tokens/azure-identity-token";

TransportResponse TokenAnswer(int status, const json& body) {
  return {status, {{"Content-Type", "application/json; charset=utf-8"}}, body.dump()};
}

AzureCredentialOptions Creds(AzureCredentialKind kind, std::string tenant = "", std::string client = "",
                             std::string secret_file = "", std::string certificate_file = "") {
  AzureCredentialOptions o;
  o.kind = kind;
  o.tenant_id = std::move(tenant);
  o.client_id = std::move(client);
  o.client_secret_file = std::move(secret_file);
  o.certificate_file = std::move(certificate_file);
  return o;
}

WallTime Noon() { return FromUnixSeconds(1765108800); }

// A self-signed certificate over the shared test key, with both in one PEM
// (what an app registration's certificate file holds).
std::string CertificatePem(std::string* der_out) {
  const std::string key_pem = testing::SharedTestRsaKey().PrivatePem();
  BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  X509* cert = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 7);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("gpuscaler"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());
  unsigned char* der = nullptr;
  const int length = i2d_X509(cert, &der);
  *der_out = std::string(reinterpret_cast<char*>(der), static_cast<size_t>(length));
  OPENSSL_free(der);
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(out, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(out, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(out);
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem + key_pem;
}

std::string Digested(const EVP_MD* md, const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &length, md, nullptr);
  return testing::TestRsaKey::Base64Url(std::string(reinterpret_cast<char*>(out), length));
}

struct Env {
  FakeTransport transport;
  std::map<std::string, std::string> files;
  FileReader reader() {
    return [this](const std::string& path) -> Result<std::string> {
      auto it = files.find(path);
      if (it == files.end()) return Error::NotFound("No such file or directory");
      return it->second;
    };
  }
};

TEST(AzureCredentials, WorkloadIdentityExchangesTheFederatedTokenFileAtTheTenantsTokenEndpoint) {
  Env env;
  env.files[kTokenFile] = "eyJhbGciOiJSUzI1NiJ9.projected-sa-token-one.sig\n";
  env.transport.handler = [](const TransportRequest&) {
    return TokenAnswer(200, AzureTestData("entra_token.json"));
  };
  const Environment vars = {{"AZURE_FEDERATED_TOKEN_FILE", kTokenFile},
                            {"AZURE_CLIENT_ID", kClient},
                            {"AZURE_TENANT_ID", kTenant},
                            {"AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com/"}};
  auto source = MakeAzureTokenSource({}, vars, env.transport, env.reader());
  ASSERT_TRUE(source.ok()) << source.error().ToString();
  auto token = (*source)->Get(Noon());
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  EXPECT_EQ(token->token, AzureTestData("entra_token.json")["access_token"]);
  EXPECT_EQ(token->expiry, Noon() + Seconds(3599));
  ASSERT_EQ(env.transport.requests.size(), 1u);
  const TransportRequest& r = env.transport.requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, std::string("https://login.microsoftonline.com/") + kTenant + "/oauth2/v2.0/token");
  const QueryParams form = DecodeForm(r.body);
  EXPECT_EQ(FormValue(form, "grant_type"), "client_credentials");
  EXPECT_EQ(FormValue(form, "client_id"), kClient);
  EXPECT_EQ(FormValue(form, "scope"), "https://management.azure.com/.default");
  EXPECT_EQ(FormValue(form, "client_assertion_type"), kClientAssertionType);
  EXPECT_EQ(FormValue(form, "client_assertion"), "eyJhbGciOiJSUzI1NiJ9.projected-sa-token-one.sig");

  // Cached until five minutes before it expires; then the file is read again
  // (the kubelet rotated it).
  ASSERT_TRUE((*source)->Get(Noon() + Seconds(3000)).ok());
  EXPECT_EQ(env.transport.requests.size(), 1u);
  env.files[kTokenFile] = "eyJhbGciOiJSUzI1NiJ9.projected-sa-token-two.sig";
  ASSERT_TRUE((*source)->Get(Noon() + Seconds(3599 - 299)).ok());
  ASSERT_EQ(env.transport.requests.size(), 2u);
  EXPECT_EQ(FormValue(DecodeForm(env.transport.requests[1].body), "client_assertion"),
            "eyJhbGciOiJSUzI1NiJ9.projected-sa-token-two.sig");
}

TEST(AzureCredentials, ManagedIdentityAsksImdsWithTheMetadataHeaderAndTakesStringExpiry) {
  Env env;
  env.transport.handler = [](const TransportRequest&) {
    return TokenAnswer(200, AzureTestData("imds_token.json"));
  };
  AzureCredentialOptions options;
  options.kind = AzureCredentialKind::kManagedIdentity;
  options.client_id = kClient;
  options.imds_endpoint = "http://127.0.0.1:8181/";
  auto source = MakeAzureTokenSource(options, {}, env.transport, env.reader());
  ASSERT_TRUE(source.ok());
  auto token = (*source)->Get(Noon());
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  EXPECT_EQ(token->expiry, Noon() + Seconds(86399));
  const TransportRequest& r = env.transport.requests.at(0);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.url, std::string("http://127.0.0.1:8181/metadata/identity/oauth2/token?api-version=2018-02-01&"
                               "resource=https%3A%2F%2Fmanagement.azure.com%2F&client_id=") +
                       kClient);
  EXPECT_EQ(HeaderValue(r.headers, "Metadata"), "true");
  EXPECT_EQ((*source)->Name().find("eyJ"), std::string::npos);
}

TEST(AzureCredentials, AutoPicksManagedIdentityWithoutTheWorkloadIdentityVariables) {
  Env env;
  auto source = MakeAzureTokenSource({}, {{"AZURE_CLIENT_ID", kClient}}, env.transport, env.reader());
  ASSERT_TRUE(source.ok());
  EXPECT_NE((*source)->Name().find("managed identity"), std::string::npos);
  EXPECT_NE((*source)->Name().find(kAzureImdsEndpoint), std::string::npos);
}

TEST(AzureCredentials, ARejectedSecretIsAnAuthErrorThatNeverQuotesTheSecret) {
  Env env;
  const std::string secret = "Qx8Q~abcdefghijklmnopqrstuvwxyz0123456";
  env.files["/etc/gpuscaler/azure/client-secret"] = secret + "\n";
  env.transport.handler = [&](const TransportRequest&) {
    json echo = AzureTestData("entra_error.json");
    echo["error_description"] = "AADSTS7000215: Invalid client secret provided: " + secret;
    return TokenAnswer(401, echo);
  };
  AzureCredentialOptions options;
  options.kind = AzureCredentialKind::kClientSecret;
  options.tenant_id = kTenant;
  options.client_id = kClient;
  options.client_secret_file = "/etc/gpuscaler/azure/client-secret";
  auto source = MakeAzureTokenSource(options, {}, env.transport, env.reader());
  ASSERT_TRUE(source.ok()) << source.error().ToString();
  auto token = (*source)->Get(Noon());
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(token.error().message().find("HTTP 401"), std::string::npos);
  EXPECT_NE(token.error().message().find("invalid_client"), std::string::npos);
  EXPECT_EQ(token.error().message().find(secret), std::string::npos) << token.error().message();
  EXPECT_EQ(FormValue(DecodeForm(env.transport.requests.at(0).body), "client_secret"), secret);
}

TEST(AzureCredentials, AFailedRefreshKeepsTheCachedTokenUntilItExpires) {
  Env env;
  env.files[kTokenFile] = "projected-token";
  int calls = 0;
  env.transport.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    if (calls++ == 0) return TokenAnswer(200, AzureTestData("entra_token.json"));
    return TokenAnswer(503, json{{"error", "temporarily_unavailable"}});
  };
  auto source = MakeAzureTokenSource(Creds(AzureCredentialKind::kWorkloadIdentity, kTenant, kClient),
                                     {{"AZURE_FEDERATED_TOKEN_FILE", kTokenFile}}, env.transport, env.reader());
  ASSERT_TRUE(source.ok());
  auto first = (*source)->Get(Noon());
  ASSERT_TRUE(first.ok());
  auto during = (*source)->Get(Noon() + Seconds(3400));  // refresh due, endpoint down
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->token, first->token);
  auto after = (*source)->Get(Noon() + Seconds(3600));  // expired
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().category(), ErrorCategory::kTransient);
}

TEST(AzureCredentials, TheCertificateAssertionCarriesItsThumbprintsAndVerifiesWithItsKey) {
  Env env;
  std::string der;
  env.files["/etc/gpuscaler/azure/cert.pem"] = CertificatePem(&der);
  env.transport.handler = [](const TransportRequest&) {
    return TokenAnswer(200, AzureTestData("entra_token.json"));
  };
  AzureCredentialOptions options;
  options.kind = AzureCredentialKind::kClientCertificate;
  options.tenant_id = kTenant;
  options.client_id = kClient;
  options.certificate_file = "/etc/gpuscaler/azure/cert.pem";
  options.authority_host = "https://login.test";
  auto source = MakeAzureTokenSource(options, {}, env.transport, env.reader());
  ASSERT_TRUE(source.ok()) << source.error().ToString();
  ASSERT_TRUE((*source)->Get(Noon()).ok());
  const QueryParams form = DecodeForm(env.transport.requests.at(0).body);
  EXPECT_EQ(FormValue(form, "client_assertion_type"), kClientAssertionType);
  EXPECT_FALSE(FormValue(form, "client_secret").has_value());
  const std::string assertion = FormValue(form, "client_assertion").value_or("");
  const std::vector<std::string_view> parts = Split(assertion, '.');
  ASSERT_EQ(parts.size(), 3u);
  const json header = json::parse(*Base64UrlDecode(parts[0]));
  const json claims = json::parse(*Base64UrlDecode(parts[1]));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["x5t#S256"], Digested(EVP_sha256(), der));
  EXPECT_EQ(header["x5t"], Digested(EVP_sha1(), der));
  const std::string endpoint = std::string("https://login.test/") + kTenant + "/oauth2/v2.0/token";
  EXPECT_EQ(claims["aud"], endpoint);
  EXPECT_EQ(claims["iss"], kClient);
  EXPECT_EQ(claims["sub"], kClient);
  EXPECT_EQ(claims["exp"].get<int64_t>() - claims["nbf"].get<int64_t>(), 600);
  EXPECT_FALSE(claims["jti"].get<std::string>().empty());
  EXPECT_TRUE(testing::VerifyRs256(testing::SharedTestRsaKey().PublicPem(),
                                   std::string(parts[0]) + "." + std::string(parts[1]),
                                   *Base64UrlDecode(parts[2])));
  EXPECT_EQ(env.transport.requests.at(0).url, endpoint);
}

TEST(AzureCredentials, MissingPiecesAreConfigErrorsNamingThem) {
  Env env;
  struct Case {
    std::string name;
    AzureCredentialOptions options;
    Environment vars;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"workload identity without its token file", Creds(AzureCredentialKind::kWorkloadIdentity), {}, "AZURE_FEDERATED_TOKEN_FILE"},
      {"secret without a tenant", Creds(AzureCredentialKind::kClientSecret, "", kClient, "/s"), {}, "tenant id"},
      {"certificate without a file", Creds(AzureCredentialKind::kClientCertificate, kTenant, kClient), {}, "certificate_file"},
  };
  env.files["/s"] = "secret-value-123";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto source = MakeAzureTokenSource(c.options, c.vars, env.transport, env.reader());
    ASSERT_FALSE(source.ok());
    EXPECT_EQ(source.error().category(), ErrorCategory::kConfig);
    EXPECT_NE(source.error().message().find(c.want), std::string::npos) << source.error().message();
  }
  EXPECT_EQ(ParseAzureCredentialKind("workload_identity"), AzureCredentialKind::kWorkloadIdentity);
  EXPECT_FALSE(ParseAzureCredentialKind("password").has_value());
}

}  // namespace
}  // namespace gpuscaler::cloud::azure_credentials_test
