// SigV4 against AWS's published test suite (every case under
// ../shared/reference/aws-sig-v4-test-suite/) and against requests signed by
// botocore (../shared/reference/aws/botocore-serialized/), read at test time.
#include "gpuscaler/cloud/sigv4.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud {
namespace {

namespace fs = std::filesystem;

const fs::path kSuiteDir = fs::path(GPUSCALER_SHARED_DIR) / "reference" / "aws-sig-v4-test-suite";
const fs::path kBotocoreDir = fs::path(GPUSCALER_SHARED_DIR) / "reference" / "aws" / "botocore-serialized";

constexpr const char* kAccessKey = "AKIDEXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

Credentials Creds(std::string id, std::string secret, std::string token = "") {
  Credentials c;
  c.access_key_id = std::move(id);
  c.secret_access_key = std::move(secret);
  c.session_token = std::move(token);
  return c;
}

SigningParams Params(std::string service, WallTime t) {
  SigningParams p;
  p.region = "us-east-1";
  p.service = std::move(service);
  p.time = t;
  return p;
}

SigningRequest Req(std::string method, std::vector<std::pair<std::string, std::string>> headers,
                   std::string body = "") {
  SigningRequest r;
  r.method = std::move(method);
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

WallTime SuiteTime() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2015-08-30T12:36:00Z", &t));
  return t;
}

std::string Read(const fs::path& p) {
  auto r = ReadTextFile(p.string());
  EXPECT_TRUE(r.ok()) << p;
  return r.ok() ? *r : std::string();
}

// A raw request of the suite: request line, "Name:value" headers (a line
// starting with blanks continues the previous value), blank line, body.
SigningRequest ParseRawRequest(const std::string& text) {
  SigningRequest r;
  size_t pos = text.find('\n');
  std::string line = text.substr(0, pos);
  const size_t sp = line.find(' ');
  const size_t proto = line.rfind(" HTTP/");
  r.method = line.substr(0, sp);
  std::string target = line.substr(sp + 1, proto - sp - 1);
  const size_t q = target.find('?');
  r.path = target.substr(0, q);
  if (q != std::string::npos) r.query = target.substr(q + 1);
  while (pos != std::string::npos) {
    const size_t start = pos + 1;
    pos = text.find('\n', start);
    line = text.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
    if (line.empty()) {
      if (pos != std::string::npos) r.body = text.substr(pos + 1);
      break;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !r.headers.empty()) {
      r.headers.back().second += "\n" + line;
      continue;
    }
    const size_t colon = line.find(':');
    r.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  return r;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

struct SuiteCase {
  std::string name;
  fs::path dir;
};

std::vector<SuiteCase> SuiteCases() {
  std::vector<SuiteCase> out;
  std::error_code ec;
  if (!fs::is_directory(kSuiteDir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(kSuiteDir, ec)) {
    if (!e.is_directory()) continue;
    const std::string name = e.path().filename().string();
    if (fs::exists(e.path() / (name + ".req"))) out.push_back({name, e.path()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

void PrintTo(const SuiteCase& c, std::ostream* os) { *os << c.name; }

class SigV4Suite : public ::testing::TestWithParam<SuiteCase> {};

TEST_P(SigV4Suite, MatchesCanonicalRequestStringToSignAndAuthorization) {
  const SuiteCase& c = GetParam();
  const fs::path base = c.dir / c.name;
  SigningRequest request = ParseRawRequest(Read(base.string() + ".req"));
  SigningParams params = Params("service", SuiteTime());
  Credentials creds = Creds(kAccessKey, kSecret);
  if (c.name.rfind("post-sts-header-", 0) == 0) {
    std::string readme = Read(kSuiteDir / "post-sts-token" / "readme.txt");
    // The token is the readme's last word (the file has CRLF line ends).
    while (!readme.empty() && std::isspace(static_cast<unsigned char>(readme.back()))) readme.pop_back();
    creds.session_token = readme.substr(readme.find_last_of(" \r\n\t") + 1);
    params.sign_security_token = c.name == "post-sts-header-before";
  }

  const std::string creq = CanonicalRequest(request, params);
  EXPECT_EQ(creq, Read(base.string() + ".creq"));
  EXPECT_EQ(StringToSign(creq, params), Read(base.string() + ".sts"));

  ASSERT_TRUE(Sign(request, creds, params).ok());
  EXPECT_EQ(request.headers.back().first, "Authorization");
  EXPECT_EQ(request.headers.back().second, Read(base.string() + ".authz"));

  // The signed request as a whole: same headers in the same order as .sreq.
  SigningRequest want = ParseRawRequest(Read(base.string() + ".sreq"));
  ASSERT_EQ(request.headers.size(), want.headers.size());
  for (size_t i = 0; i < want.headers.size(); ++i) {
    EXPECT_EQ(request.headers[i].first, want.headers[i].first);
    EXPECT_EQ(Trimmed(request.headers[i].second), Trimmed(want.headers[i].second));
  }
  EXPECT_EQ(request.body, want.body);
}

INSTANTIATE_TEST_SUITE_P(AwsSuite, SigV4Suite, ::testing::ValuesIn(SuiteCases()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SigV4Suite);

TEST(SigV4, SuiteHasAllThirtyOneCases) {
  if (!fs::is_directory(kSuiteDir)) GTEST_SKIP() << "no " << kSuiteDir << " (../shared absent)";
  EXPECT_EQ(SuiteCases().size(), 31u);
}

// The botocore-signed Query requests: form body from the params in order,
// then canonical request, string to sign and Authorization.
TEST(SigV4, MatchesBotocoreSignedQueryRequests) {
  if (!fs::is_directory(kBotocoreDir)) GTEST_SKIP() << "no " << kBotocoreDir << " (../shared absent)";
  int checked = 0;
  for (const auto& e : fs::directory_iterator(kBotocoreDir)) {
    if (e.path().extension() != ".sreq") continue;
    const std::string stem = e.path().stem().string();  // "ec2-CreateFleet"
    SCOPED_TRACE(stem);
    const fs::path base = kBotocoreDir / stem;
    const std::string service = stem.substr(0, stem.find('-'));

    auto params_json = nlohmann::ordered_json::parse(Read(base.string() + ".params.json"));
    std::string body;
    for (const auto& [k, v] : params_json.items()) {
      if (!body.empty()) body += '&';
      body += UriEncode(k) + "=" + UriEncode(v.is_string() ? v.get<std::string>() : v.dump());
    }
    EXPECT_EQ(body, Read(base.string() + ".body.txt"));

    // .sreq headers are "Name: value"; drop Authorization and sign the rest.
    SigningRequest request = ParseRawRequest(Read(e.path()));
    std::string want_authz;
    for (auto it = request.headers.begin(); it != request.headers.end(); ++it) {
      if (it->first == "Authorization") {
        want_authz = Trimmed(it->second);
        request.headers.erase(it);
        break;
      }
    }
    for (auto& h : request.headers) h.second = Trimmed(h.second);
    EXPECT_EQ(request.body, body);
    SigningParams params = Params(service, SuiteTime());
    const std::string creq = CanonicalRequest(request, params);
    EXPECT_EQ(creq, Read(base.string() + ".creq"));
    EXPECT_EQ(StringToSign(creq, params), Read(base.string() + ".sts"));
    ASSERT_TRUE(Sign(request, Creds(kAccessKey, kSecret), params).ok());
    EXPECT_EQ(request.headers.back().second, want_authz);
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST(SigV4, SessionTokenIsSignedByDefault) {
  SigningRequest r = Req("POST", {{"Host", "ec2.us-east-1.amazonaws.com"}}, "Action=X");
  SigningParams p = Params("ec2", SuiteTime());
  ASSERT_TRUE(Sign(r, Creds("AKID", "s", "tok"), p).ok());
  ASSERT_EQ(r.headers.size(), 4u);
  EXPECT_EQ(r.headers[1], (std::pair<std::string, std::string>{"X-Amz-Date", "20150830T123600Z"}));
  EXPECT_EQ(r.headers[2], (std::pair<std::string, std::string>{"X-Amz-Security-Token", "tok"}));
  EXPECT_NE(r.headers[3].second.find("SignedHeaders=host;x-amz-date;x-amz-security-token,"), std::string::npos);
}

TEST(SigV4, RefusesEmptyCredentialsAndMissingHost) {
  SigningParams p = Params("ec2", SuiteTime());
  SigningRequest no_host = Req("GET", {});
  EXPECT_EQ(Sign(no_host, Creds("A", "s"), p).error().category(),
            ErrorCategory::kInvalidInput);
  SigningRequest r = Req("GET", {{"Host", "h"}});
  EXPECT_EQ(Sign(r, {}, p).error().category(), ErrorCategory::kAuth);
}

TEST(SigV4, ParsesAuthorizationHeaders) {
  auto a = ParseAuthorization(
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/ec2/aws4_request, "
      "SignedHeaders=content-type;host;x-amz-date, Signature=abcd");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->access_key_id, "AKIDEXAMPLE");
  EXPECT_EQ(a->day, "20150830");
  EXPECT_EQ(a->region, "us-east-1");
  EXPECT_EQ(a->service, "ec2");
  EXPECT_EQ(a->signed_headers, "content-type;host;x-amz-date");
  EXPECT_EQ(a->signature, "abcd");
  EXPECT_FALSE(ParseAuthorization("Basic dXNlcg==").ok());
  EXPECT_FALSE(ParseAuthorization("AWS4-HMAC-SHA256 Credential=AKID/2015/us-east-1, Signature=x").ok());
}

TEST(SigV4, UriEncodingAndDecoding) {
  EXPECT_EQ(UriEncode("a b/c~$"), "a%20b%2Fc~%24");
  EXPECT_EQ(UriEncode("a b/c", true), "a%20b/c");
  EXPECT_EQ(UriDecode("%24Latest+x%2"), "$Latest+x%2");
}

TEST(SigV4, CredentialsRedactedShowsNoSecret) {
  Credentials c = Creds("AKIAEXAMPLE1234", "topsecret", "tok");
  const std::string s = c.Redacted();
  EXPECT_EQ(s.find("topsecret"), std::string::npos);
  EXPECT_EQ(s.find("tok "), std::string::npos);
  EXPECT_EQ(s.find("AKIAEXAMPLE"), std::string::npos);
}

}  // namespace
}  // namespace gpuscaler::cloud
