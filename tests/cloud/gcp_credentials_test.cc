#include "gpuscaler/cloud/gcp_credentials.h"

#include <gtest/gtest.h>

#include <thread>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/text.h"
#include "tests/cloud/fake_transport.h"
#include "tests/cloud/gcp_test_key.h"

namespace gpuscaler::cloud {
namespace {

using testing::FakeTransport;

constexpr const char* kTokenUri = "http://127.0.0.1:9/token";
constexpr const char* kKeyPath = "/secrets/gcp/key.json";

FileReader Files(std::map<std::string, std::string> files) {
  return [files = std::move(files)](const std::string& path) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return Error::NotFound("No such file or directory");
    return it->second;
  };
}

WallTime At(int64_t unix_seconds) { return FromUnixSeconds(unix_seconds); }

TransportResponse Json(int status, const std::string& body) {
  return {status, {{"Content-Type", "application/json; charset=utf-8"}}, body};
}

GoogleCredentialsFile TestKey() {
  auto key = ParseGoogleCredentialsFile(
      testing::ServiceAccountKeyJson(kTokenUri, testing::SharedTestRsaKey().PrivatePem()), kKeyPath);
  EXPECT_TRUE(key.ok()) << key.error().ToString();
  return *key;
}

TEST(GcpCredentials, Base64UrlRoundTrip) {
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  EXPECT_EQ(Base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(Base64UrlEncode("foo"), "Zm9v");
  // '+' and '/' of standard base64 become '-' and '_'.
  EXPECT_EQ(Base64UrlEncode("\xfb\xff\xbf"), "-_-_");
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(Base64UrlDecode(Base64UrlEncode(s)), s);
  }
  EXPECT_EQ(Base64UrlDecode("Zg=="), "f");
  EXPECT_FALSE(Base64UrlDecode("Z+g").has_value());
  EXPECT_FALSE(Base64UrlDecode("Z").has_value());
}

TEST(GcpCredentials, ParsesKeyFilesAndNamesTheFileOnErrors) {
  const GoogleCredentialsFile key = TestKey();
  EXPECT_EQ(key.type, "service_account");
  EXPECT_EQ(key.client_email, "gpuscaler@gpu-project.iam.gserviceaccount.com");
  EXPECT_EQ(key.project_id, "gpu-project");
  EXPECT_EQ(key.token_uri, kTokenUri);

  auto bad = ParseGoogleCredentialsFile("{not json", kKeyPath);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(bad.error().message().find(kKeyPath), std::string::npos);

  auto no_key = ParseGoogleCredentialsFile(R"({"type":"service_account","client_email":"a@b"})", kKeyPath);
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.error().message().find("private_key"), std::string::npos);

  auto external = ParseGoogleCredentialsFile(R"({"type":"external_account"})", kKeyPath);
  ASSERT_FALSE(external.ok());
  EXPECT_NE(external.error().message().find("external_account"), std::string::npos);

  auto user = ParseGoogleCredentialsFile(
      R"({"type":"authorized_user","client_id":"id","client_secret":"s","refresh_token":"r"})", "/adc.json");
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->token_uri, "https://oauth2.googleapis.com/token");
}

TEST(GcpCredentials, JwtAssertionHeaderClaimsAndSignature) {
  const GoogleCredentialsFile key = TestKey();
  auto jwt = SignJwtAssertion(key, kComputeScope, At(1'700'000'000));
  ASSERT_TRUE(jwt.ok()) << jwt.error().ToString();
  const std::vector<std::string_view> parts = Split(*jwt, '.');
  ASSERT_EQ(parts.size(), 3u);

  auto header = nlohmann::json::parse(*Base64UrlDecode(parts[0]));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["typ"], "JWT");
  EXPECT_EQ(header["kid"], key.private_key_id);

  auto claims = nlohmann::json::parse(*Base64UrlDecode(parts[1]));
  EXPECT_EQ(claims["iss"], key.client_email);
  EXPECT_EQ(claims["scope"], "https://www.googleapis.com/auth/compute");
  EXPECT_EQ(claims["aud"], kTokenUri);
  EXPECT_EQ(claims["iat"], 1'700'000'000);
  EXPECT_EQ(claims["exp"], 1'700'003'600);

  const std::string signing_input = std::string(parts[0]) + "." + std::string(parts[1]);
  const std::string signature = *Base64UrlDecode(parts[2]);
  EXPECT_EQ(signature.size(), 256u);  // RSA-2048
  EXPECT_TRUE(testing::VerifyRs256(testing::SharedTestRsaKey().PublicPem(), signing_input, signature));
  // Tampered claims do not verify.
  EXPECT_FALSE(testing::VerifyRs256(testing::SharedTestRsaKey().PublicPem(), signing_input + "x", signature));
  // Another key's public half does not verify it either.
  const testing::TestRsaKey other;
  EXPECT_FALSE(testing::VerifyRs256(other.PublicPem(), signing_input, signature));

  GoogleCredentialsFile broken = key;
  broken.private_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  auto failed = SignJwtAssertion(broken, kComputeScope, At(1'700'000'000));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().category(), ErrorCategory::kAuth);
}

TEST(GcpCredentials, ServiceAccountTokenExchangeAndRefreshTiming) {
  FakeTransport t;
  int issued = 0;
  t.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.url, kTokenUri);
    EXPECT_EQ(HeaderValue(r.headers, "Content-Type"), "application/x-www-form-urlencoded");
    const QueryParams form = DecodeForm(r.body);
    EXPECT_EQ(FormValue(form, "grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
    const std::string assertion = FormValue(form, "assertion").value_or("");
    EXPECT_EQ(Split(assertion, '.').size(), 3u);
    ++issued;
    return Json(200, R"({"access_token":"ya29.token-)" + std::to_string(issued) +
                         R"(","expires_in":3599,"token_type":"Bearer"})");
  };
  KeyFileTokenSource source(TestKey(), kKeyPath, kComputeScope, t);
  EXPECT_EQ(source.Name(), std::string("service account key ") + kKeyPath);

  const WallTime t0 = At(1'700'000'000);
  auto first = source.Get(t0);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->token, "ya29.token-1");
  EXPECT_EQ(first->expiry, t0 + Seconds(3599));
  // Cached until five minutes before expiry.
  EXPECT_EQ(source.Get(t0 + Seconds(3599 - 301))->token, "ya29.token-1");
  EXPECT_EQ(t.requests.size(), 1u);
  EXPECT_EQ(source.Get(t0 + Seconds(3599 - 299))->token, "ya29.token-2");
  EXPECT_EQ(t.requests.size(), 2u);
  EXPECT_EQ(source.refreshes(), 2);
  // The redacted form shows no token.
  EXPECT_EQ(first->Redacted().find("ya29"), std::string::npos);
}

TEST(GcpCredentials, InvalidGrantIsAnAuthErrorNamingTheKeyFile) {
  FakeTransport t;
  t.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return Json(400, R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})");
  };
  KeyFileTokenSource source(TestKey(), kKeyPath, kComputeScope, t);
  auto token = source.Get(At(1'700'000'000));
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().category(), ErrorCategory::kAuth);
  const std::string& m = token.error().message();
  EXPECT_NE(m.find(kKeyPath), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 400"), std::string::npos) << m;
  EXPECT_NE(m.find("invalid_grant"), std::string::npos) << m;
  // Neither the key nor the assertion is in the message.
  EXPECT_EQ(m.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(m.find("eyJ"), std::string::npos);

  t.handler = [](const TransportRequest&) -> Result<TransportResponse> { return Json(503, "{}"); };
  EXPECT_EQ(source.Get(At(1'700'000'000)).error().category(), ErrorCategory::kTransient);
  t.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return Error::Transient("refused");
  };
  EXPECT_EQ(source.Get(At(1'700'000'000)).error().category(), ErrorCategory::kTransient);
  t.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return Json(200, R"({"access_token":"x"})");
  };
  EXPECT_EQ(source.Get(At(1'700'000'000)).error().category(), ErrorCategory::kAuth);
}

TEST(GcpCredentials, FailedRefreshKeepsAnUnexpiredToken) {
  FakeTransport t;
  bool up = true;
  t.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    if (!up) return Json(500, "{}");
    return Json(200, R"({"access_token":"ya29.a","expires_in":3600,"token_type":"Bearer"})");
  };
  KeyFileTokenSource source(TestKey(), kKeyPath, kComputeScope, t);
  const WallTime t0 = At(1'700'000'000);
  ASSERT_TRUE(source.Get(t0).ok());
  up = false;
  // Inside the refresh window: the refresh fails, the old token still works.
  auto kept = source.Get(t0 + Seconds(3500));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->token, "ya29.a");
  // Expired: the failure shows.
  EXPECT_EQ(source.Get(t0 + Seconds(3600)).error().category(), ErrorCategory::kTransient);
}

TEST(GcpCredentials, ConcurrentCallersShareOneRefresh) {
  FakeTransport t;
  t.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return Json(200, R"({"access_token":"ya29.shared","expires_in":3600,"token_type":"Bearer"})");
  };
  KeyFileTokenSource source(TestKey(), kKeyPath, kComputeScope, t);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20; ++k) EXPECT_EQ(source.Get(At(1'700'000'000))->token, "ya29.shared");
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(source.refreshes(), 1);
}

TEST(GcpCredentials, AuthorizedUserTradesItsRefreshToken) {
  FakeTransport t;
  t.handler = [](const TransportRequest& r) -> Result<TransportResponse> {
    const QueryParams form = DecodeForm(r.body);
    EXPECT_EQ(FormValue(form, "grant_type"), "refresh_token");
    EXPECT_EQ(FormValue(form, "refresh_token"), "1//refresh");
    EXPECT_EQ(FormValue(form, "client_id"), "cid");
    return Json(200, R"({"access_token":"ya29.user","expires_in":3600,"token_type":"Bearer"})");
  };
  auto file = ParseGoogleCredentialsFile(
      R"({"type":"authorized_user","client_id":"cid","client_secret":"cs","refresh_token":"1//refresh",)"
      R"("token_uri":"http://127.0.0.1:9/token"})",
      "/home/u/.config/gcloud/application_default_credentials.json");
  ASSERT_TRUE(file.ok());
  KeyFileTokenSource source(*file, "/adc.json", kComputeScope, t);
  EXPECT_EQ(source.Get(At(1'700'000'000))->token, "ya29.user");
  EXPECT_EQ(t.requests.at(0).url, "http://127.0.0.1:9/token");
}

TEST(GcpCredentials, MetadataServerToken) {
  FakeTransport t;
  t.handler = [](const TransportRequest& r) -> Result<TransportResponse> {
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(HeaderValue(r.headers, "Metadata-Flavor"), "Google");
    EXPECT_EQ(r.url,
              "http://127.0.0.1:8089/computeMetadata/v1/instance/service-accounts/default/token"
              "?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcompute");
    return TransportResponse{200,
                             {{"Metadata-Flavor", "Google"}, {"Content-Type", "application/json"}},
                             R"({"access_token":"ya29.md","expires_in":1800,"token_type":"Bearer"})"};
  };
  auto source = DefaultTokenSource({{"GCE_METADATA_HOST", "127.0.0.1:8089"}}, t, Files({}));
  ASSERT_TRUE(source.ok()) << source.error().ToString();
  EXPECT_EQ((*source)->Name(), "metadata server 127.0.0.1:8089");
  auto token = (*source)->Get(At(1'700'000'000));
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  EXPECT_EQ(token->token, "ya29.md");
  EXPECT_EQ(token->expiry, At(1'700'001'800));

  // Not on Google Cloud: no answer is kNotFound (no credentials anywhere).
  t.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return Error::Transient("no route");
  };
  MetadataTokenSource absent("metadata.google.internal", kComputeScope, t);
  EXPECT_EQ(absent.Get(At(1'700'000'000)).error().category(), ErrorCategory::kNotFound);
  t.handler = [](const TransportRequest&) -> Result<TransportResponse> { return Json(403, "{}"); };
  EXPECT_EQ(absent.Get(At(1'700'000'000)).error().category(), ErrorCategory::kAuth);
}

TEST(GcpCredentials, DefaultChainOrder) {
  FakeTransport t;
  const std::string key = testing::ServiceAccountKeyJson(kTokenUri, testing::SharedTestRsaKey().PrivatePem());
  const std::string adc = "/home/u/.config/gcloud/application_default_credentials.json";
  // 1. GOOGLE_APPLICATION_CREDENTIALS wins over everything.
  auto s1 = DefaultTokenSource({{"GOOGLE_APPLICATION_CREDENTIALS", kKeyPath},
                                {"HOME", "/home/u"},
                                {"GCE_METADATA_HOST", "127.0.0.1:1"}},
                               t, Files({{kKeyPath, key}, {adc, key}}));
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ((*s1)->Name(), std::string("service account key ") + kKeyPath);
  // A named key file that is missing is an error naming it, not a fall-through.
  auto missing = DefaultTokenSource({{"GOOGLE_APPLICATION_CREDENTIALS", kKeyPath}}, t, Files({}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(missing.error().message().find(kKeyPath), std::string::npos);
  // 2. gcloud's well-known file.
  auto s2 = DefaultTokenSource({{"HOME", "/home/u"}}, t, Files({{adc, key}}));
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ((*s2)->Name(), "service account key " + adc);
  auto s2b = DefaultTokenSource({{"CLOUDSDK_CONFIG", "/cfg"}}, t,
                                Files({{"/cfg/application_default_credentials.json", key}}));
  ASSERT_TRUE(s2b.ok());
  // 3. The metadata server (default host), unless NO_GCE_CHECK=true.
  auto s3 = DefaultTokenSource({{"HOME", "/home/u"}}, t, Files({}));
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ((*s3)->Name(), "metadata server metadata.google.internal");
  EXPECT_EQ(DefaultTokenSource({{"NO_GCE_CHECK", "True"}}, t, Files({})).error().category(),
            ErrorCategory::kAuth);

  EXPECT_EQ(ProjectFromCredentials({{"GOOGLE_APPLICATION_CREDENTIALS", kKeyPath}}, Files({{kKeyPath, key}})),
            "gpu-project");
  EXPECT_EQ(ProjectFromCredentials({}, Files({})), "");
}

TEST(GcpCredentials, AnEchoedAssertionIsScrubbedFromTheMessage) {
  FakeTransport t;
  t.handler = [](const TransportRequest& r) -> Result<TransportResponse> {
    const std::string assertion = FormValue(DecodeForm(r.body), "assertion").value_or("");
    const std::string signature = assertion.substr(assertion.rfind('.') + 1);
    return Json(400, nlohmann::json{{"error", "invalid_grant"},
                                    {"error_description", "bad " + assertion + " / " + signature}}
                         .dump());
  };
  KeyFileTokenSource source(TestKey(), kKeyPath, kComputeScope, t);
  auto token = source.Get(At(1'700'000'000));
  ASSERT_FALSE(token.ok());
  const std::string assertion = FormValue(DecodeForm(t.requests.at(0).body), "assertion").value_or("");
  ASSERT_FALSE(assertion.empty());
  const std::string& m = token.error().message();
  EXPECT_EQ(m.find(assertion), std::string::npos) << m;
  EXPECT_EQ(m.find(assertion.substr(assertion.rfind('.') + 1)), std::string::npos) << m;
  EXPECT_NE(m.find("bad [redacted] / [redacted]"), std::string::npos) << m;
  EXPECT_EQ(ScrubSecrets("a short-x b", {"short-x"}), "a short-x b");  // under 8 characters: not a secret
  EXPECT_EQ(ScrubSecrets("x ya29.abcdefgh y ya29.abcdefgh", {"ya29.abcdefgh"}), "x [redacted] y [redacted]");
}

}  // namespace
}  // namespace gpuscaler::cloud
