#include "gpuscaler/cloud/credentials.h"

#include <gtest/gtest.h>

#include "gpuscaler/cloud/aws_query.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::cloud {
namespace {

using testing::FakeTransport;

FileReader Files(std::map<std::string, std::string> files) {
  return [files = std::move(files)](const std::string& path) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return Error::NotFound("No such file or directory");
    return it->second;
  };
}

WallTime T(const char* s) {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339(s, &t));
  return t;
}

std::string StsAnswer(const std::string& id, const std::string& secret, const std::string& token, const char* exp) {
  return R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:kube-system:gpuscaler</SubjectFromWebIdentityToken>
    <Credentials>
      <SessionToken>)" + token + R"(</SessionToken>
      <SecretAccessKey>)" + secret + R"(</SecretAccessKey>
      <Expiration>)" + exp + R"(</Expiration>
      <AccessKeyId>)" + id + R"(</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>)";
}

TEST(Credentials, FromEnvironment) {
  auto c = CredentialsFromEnvironment({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "sk"}, {"AWS_SESSION_TOKEN", "tk"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key_id, "AKID");
  EXPECT_EQ(c->secret_access_key, "sk");
  EXPECT_EQ(c->session_token, "tk");
  EXPECT_EQ(CredentialsFromEnvironment({}).error().category(), ErrorCategory::kNotFound);
  EXPECT_EQ(CredentialsFromEnvironment({{"AWS_ACCESS_KEY_ID", "AKID"}}).error().category(), ErrorCategory::kConfig);
}

TEST(Credentials, ProfilesFromSharedFiles) {
  const IniFile creds = ParseIni(
      "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s-default\n\n"
      "[dev]\r\naws_access_key_id=AKIDDEV\r\naws_secret_access_key=s-dev\r\naws_session_token=t-dev\r\n");
  const IniFile config = ParseIni(
      "[default]\nregion = us-west-2\n[profile ops]\naws_access_key_id = AKIDOPS\naws_secret_access_key = s-ops\n"
      "region=eu-west-1\n[profile half]\naws_access_key_id = X\n");
  EXPECT_EQ(CredentialsFromProfile(creds, config, "default")->access_key_id, "AKIDDEFAULT");
  auto dev = CredentialsFromProfile(creds, config, "dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->session_token, "t-dev");
  EXPECT_EQ(CredentialsFromProfile(creds, config, "ops")->secret_access_key, "s-ops");
  EXPECT_EQ(CredentialsFromProfile(creds, config, "nope").error().category(), ErrorCategory::kNotFound);
  EXPECT_EQ(CredentialsFromProfile(creds, config, "half").error().category(), ErrorCategory::kConfig);

  const Environment env = {{"HOME", "/home/u"}, {"AWS_PROFILE", "ops"}};
  const SharedFileLocations l = SharedFilesFor(env);
  EXPECT_EQ(l.credentials_file, "/home/u/.aws/credentials");
  EXPECT_EQ(l.config_file, "/home/u/.aws/config");
  EXPECT_EQ(l.profile, "ops");
  const SharedFileLocations o = SharedFilesFor({{"AWS_SHARED_CREDENTIALS_FILE", "/c"}, {"AWS_CONFIG_FILE", "/k"}});
  EXPECT_EQ(o.credentials_file, "/c");
  EXPECT_EQ(o.config_file, "/k");
  EXPECT_EQ(o.profile, "default");

  auto files = Files({{"/home/u/.aws/config", "[profile ops]\nregion=eu-west-1\n"}});
  EXPECT_EQ(RegionFor(env, files), "eu-west-1");
  EXPECT_EQ(RegionFor({{"AWS_DEFAULT_REGION", "ap-south-1"}}, files), "ap-south-1");
  EXPECT_EQ(RegionFor({{"AWS_REGION", "us-east-2"}, {"AWS_DEFAULT_REGION", "x"}}, files), "us-east-2");
  EXPECT_EQ(RegionFor({}, files), std::nullopt);
}

TEST(Credentials, ChainPrefersEnvironmentThenProfile) {
  FakeTransport transport;
  auto files = Files({{"/h/.aws/credentials", "[default]\naws_access_key_id=AKIDFILE\naws_secret_access_key=sf\n"}});
  auto env_chain = DefaultCredentialsChain(
      {{"HOME", "/h"}, {"AWS_ACCESS_KEY_ID", "AKIDENV"}, {"AWS_SECRET_ACCESS_KEY", "se"}}, transport, files);
  EXPECT_EQ(env_chain->Get(T("2026-01-01"))->access_key_id, "AKIDENV");
  EXPECT_EQ(env_chain->Name(), "environment");
  auto file_chain = DefaultCredentialsChain({{"HOME", "/h"}}, transport, files);
  EXPECT_EQ(file_chain->Get(T("2026-01-01"))->access_key_id, "AKIDFILE");
  EXPECT_TRUE(transport.requests.empty());  // IMDS never asked

  // Nothing anywhere and no IMDS: kAuth naming every source tried.
  transport.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return Error::Transient("connect: Connection refused");
  };
  auto none = DefaultCredentialsChain({{"HOME", "/h"}}, transport, Files({}))->Get(T("2026-01-01"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(none.error().message().find("imds"), std::string::npos);
}

TEST(Credentials, WebIdentityAssumesRoleAndRefreshesBeforeExpiry) {
  FakeTransport sts;
  int calls = 0;
  sts.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    ++calls;
    const QueryParams q = DecodeForm(r.body);
    EXPECT_EQ(r.url, "https://sts.us-east-1.amazonaws.com/");
    EXPECT_EQ(FormValue(q, "Action"), "AssumeRoleWithWebIdentity");
    EXPECT_EQ(FormValue(q, "RoleArn"), "arn:aws:iam::123456789012:role/gpuscaler");
    EXPECT_EQ(FormValue(q, "WebIdentityToken"), "jwt-" + std::to_string(calls));
    EXPECT_EQ(HeaderValue(r.headers, "authorization"), "");  // unsigned call
    const char* exp = calls == 1 ? "2026-01-01T01:00:00Z" : "2026-01-01T02:00:00Z";
    return TransportResponse{200, {}, StsAnswer("ASIA" + std::to_string(calls), "sec", "tok", exp)};
  };
  std::string token = "jwt-1";
  FileReader read = [&](const std::string& path) -> Result<std::string> {
    if (path != "/var/run/secrets/eks.amazonaws.com/serviceaccount/token") return Error::NotFound("absent");
    return token + "\n";
  };
  auto chain = DefaultCredentialsChain({{"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/gpuscaler"},
                                        {"AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/secrets/eks.amazonaws.com/serviceaccount/token"},
                                        {"AWS_REGION", "us-east-1"},
                                        {"AWS_EC2_METADATA_DISABLED", "true"}},
                                       sts, read);
  auto c1 = chain->Get(T("2026-01-01T00:00:00Z"));
  ASSERT_TRUE(c1.ok()) << c1.error().ToString();
  EXPECT_EQ(c1->access_key_id, "ASIA1");
  EXPECT_EQ(c1->session_token, "tok");
  EXPECT_EQ(chain->Get(T("2026-01-01T00:50:00Z"))->access_key_id, "ASIA1");  // cached
  EXPECT_EQ(calls, 1);
  token = "jwt-2";  // kubelet rotated the projected token
  EXPECT_EQ(chain->Get(T("2026-01-01T00:56:00Z"))->access_key_id, "ASIA2");  // within 5 min of expiry
  EXPECT_EQ(calls, 2);

  // STS failing while the old credentials are still valid: keep them.
  sts.handler = [](const TransportRequest&) -> Result<TransportResponse> {
    return TransportResponse{503, {}, "<ErrorResponse><Error><Code>ServiceUnavailable</Code></Error></ErrorResponse>"};
  };
  EXPECT_EQ(chain->Get(T("2026-01-01T01:57:00Z"))->access_key_id, "ASIA2");
  auto expired = chain->Get(T("2026-01-01T02:00:01Z"));
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.error().category(), ErrorCategory::kTransient);
}

TEST(Credentials, ImdsV2TokenThenRoleCredentials) {
  FakeTransport imds;
  imds.handler = [](const TransportRequest& r) -> Result<TransportResponse> {
    if (r.method == "PUT" && r.url == "http://169.254.169.254/latest/api/token") {
      EXPECT_EQ(HeaderValue(r.headers, "X-aws-ec2-metadata-token-ttl-seconds"), "21600");
      return TransportResponse{200, {}, "imds-token"};
    }
    if (HeaderValue(r.headers, "X-aws-ec2-metadata-token") != "imds-token") return TransportResponse{401, {}, ""};
    if (r.url == "http://169.254.169.254/latest/meta-data/iam/security-credentials/") {
      return TransportResponse{200, {}, "gpu-node-role"};
    }
    if (r.url == "http://169.254.169.254/latest/meta-data/iam/security-credentials/gpu-node-role") {
      return TransportResponse{200, {},
                               R"({"Code":"Success","LastUpdated":"2026-01-01T00:00:00Z","Type":"AWS-HMAC",
                                   "AccessKeyId":"ASIAIMDS","SecretAccessKey":"imds-secret","Token":"imds-session",
                                   "Expiration":"2026-01-01T06:00:00Z"})"};
    }
    return TransportResponse{404, {}, ""};
  };
  ImdsCredentialsProvider p(imds);
  auto c = p.Get(T("2026-01-01T00:00:00Z"));
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->access_key_id, "ASIAIMDS");
  EXPECT_EQ(c->session_token, "imds-session");
  EXPECT_EQ(imds.requests.size(), 3u);
  EXPECT_TRUE(p.Get(T("2026-01-01T01:00:00Z")).ok());
  EXPECT_EQ(imds.requests.size(), 3u);  // cached
}

// The metadata service's answer of any JSON shape is an auth error, never
// an exception (a field of the wrong type used to throw from json::value).
TEST(Credentials, ImdsAnswersOfTheWrongShapeAreAuthErrors) {
  for (const char* body : {R"(not json)", R"([])", R"("x")", R"({"Code":7})", R"({"AccessKeyId":1})",
                           R"({"Code":"Success","AccessKeyId":"A","SecretAccessKey":"S","Expiration":5})",
                           R"({"Code":"Success","AccessKeyId":"A","SecretAccessKey":{},"Expiration":"2026-01-01T06:00:00Z"})"}) {
    SCOPED_TRACE(body);
    Result<Credentials> c = ParseImdsCredentials(body);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().category(), ErrorCategory::kAuth);
  }
  // A missing Code means success; a non-string Token is no token.
  Result<Credentials> c = ParseImdsCredentials(
      R"({"AccessKeyId":"A","SecretAccessKey":"S","Token":3,"Expiration":"2026-01-01T06:00:00Z"})");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->session_token, "");
}

// A secret planted in every source must never show in an error or log string.
TEST(Credentials, SecretsNeverAppearInErrors) {
  const std::string kSecret = "PLANTEDsecretVALUE0123456789abcdefXYZ";
  const std::string kToken = "PLANTEDsessionTOKEN";
  const std::string kJwt = "PLANTEDjwtTOKEN";
  std::vector<std::string> said;
  auto keep = [&](const auto& r) {
    if (!r.ok()) said.push_back(r.error().ToString());
    else said.push_back(r->Redacted());
  };
  keep(CredentialsFromEnvironment({{"AWS_SECRET_ACCESS_KEY", kSecret}}));
  keep(CredentialsFromEnvironment({{"AWS_ACCESS_KEY_ID", "AKIDPLANTED123"}, {"AWS_SECRET_ACCESS_KEY", kSecret}, {"AWS_SESSION_TOKEN", kToken}}));
  keep(CredentialsFromProfile(ParseIni("[p]\naws_access_key_id=\naws_secret_access_key=" + kSecret + "\n"), {}, "p"));
  keep(CredentialsFromProfile(ParseIni("[p]\naws_secret_access_key=" + kSecret + "\n"), {}, "p"));

  FakeTransport sts;
  const std::vector<TransportResponse> answers = {
      {200, {}, StsAnswer("ASIA", kSecret, kToken, "not-a-time")},
      {200, {}, "<x>" + kSecret + "</x>"},
      {400, {}, "<ErrorResponse><Error><Code>InvalidIdentityToken</Code><Message>bad token</Message></Error></ErrorResponse>"},
      {500, {}, kSecret},
  };
  for (const TransportResponse& a : answers) {
    sts.handler = [&](const TransportRequest&) -> Result<TransportResponse> { return a; };
    WebIdentityCredentialsProvider::Options o;
    o.role_arn = "arn:aws:iam::1:role/r";
    o.token_file = "/t";
    WebIdentityCredentialsProvider p(o, sts, Files({{"/t", kJwt}}));
    keep(p.Get(T("2026-01-01")));
  }
  keep(ParseImdsCredentials(R"({"Code":"Success","AccessKeyId":"A","SecretAccessKey":")" + kSecret + R"(","Token":")" + kToken + R"("})"));
  keep(ParseImdsCredentials(R"({"Code":"Failure","SecretAccessKey":")" + kSecret + R"("})"));

  ASSERT_GE(said.size(), 10u);
  for (const std::string& s : said) {
    SCOPED_TRACE(s);
    EXPECT_EQ(s.find("PLANTED"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpuscaler::cloud
