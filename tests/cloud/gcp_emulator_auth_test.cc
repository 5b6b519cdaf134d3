// The Compute Engine emulator's authentication, without sockets: compute calls
// need a live bearer token, the token endpoint verifies the JWT's signature,
// issuer, audience and lifetime, and the metadata server hands out tokens to a
// request with the flavor header.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "cloud/gcp_test_key.h"
#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/gcp_emulator_fixture.h"

namespace gpuscaler::sim::gcp_emulator_auth_test {
namespace {

using nlohmann::json;
using cloud::testing::TestRsaKey;
using gcp_emulator_testing::GcpEmulatorTest;
using gcp_emulator_testing::Reason;

constexpr const char* kSa = "scaler@gpuscaler-test.iam.gserviceaccount.com";

int64_t Unix(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

TEST_F(GcpEmulatorTest, ComputeCallsNeedALiveBearerToken) {
  Emu();
  auto none = Call("GET", "aggregated/instances", "", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.body["error"]["code"], 401);
  EXPECT_EQ(Reason(none.body), "required");
  EXPECT_EQ(none.body["error"]["status"], "UNAUTHENTICATED");
  auto bad = Call("GET", "aggregated/instances", "", "ya29.forged");
  EXPECT_EQ(bad.status, 401);
  EXPECT_EQ(Reason(bad.body), "authError");
  EXPECT_EQ(Get("aggregated/instances").status, 200);
  EXPECT_EQ(emu_->stats().auth_failures, 2);
}

TEST_F(GcpEmulatorTest, TokenEndpointVerifiesTheJwtSignatureIssuerAndLifetime) {
  TestRsaKey key, other;
  Emu("token_lifetime: 10m\nservice_accounts:\n  - email: " + std::string(kSa) + "\n    public_key: |\n" +
      [&] {
        std::string indented;
        std::string pem = key.PublicPem();
        size_t at = 0;
        while (at < pem.size()) {
          const size_t nl = pem.find('\n', at);
          indented += "      " + pem.substr(at, nl - at) + "\n";
          at = nl == std::string::npos ? pem.size() : nl + 1;
        }
        return indented;
      }());
  const int64_t now = Unix(clock_.WallNow());

  auto ok = Token(Jwt(key, kSa, now, now + 3600));
  ASSERT_EQ(ok.status, 200) << ok.raw.body;
  EXPECT_EQ(ok.body["token_type"], "Bearer");
  EXPECT_EQ(ok.body["expires_in"], 600);
  const std::string token = ok.body["access_token"];
  EXPECT_EQ(Call("GET", "aggregated/instances", "", token).status, 200);

  auto forged = Token(Jwt(other, kSa, now, now + 3600));
  EXPECT_EQ(forged.status, 400);
  EXPECT_EQ(forged.body["error"], "invalid_grant");
  EXPECT_EQ(forged.body["error_description"], "Invalid JWT Signature.");

  auto stranger = Token(Jwt(key, "someone@else.iam.gserviceaccount.com", now, now + 3600));
  EXPECT_EQ(stranger.body["error"], "invalid_grant");
  EXPECT_EQ(stranger.body["error_description"], "Invalid grant: account not found");

  auto stale = Token(Jwt(key, kSa, now - 7200, now - 3600));
  EXPECT_EQ(stale.body["error"], "invalid_grant");
  EXPECT_NE(stale.body["error_description"].get<std::string>().find("iat and exp"), std::string::npos);

  auto too_long = Token(Jwt(key, kSa, now, now + 7200));
  EXPECT_EQ(too_long.body["error"], "invalid_grant");

  auto wrong_aud = Token(Jwt(key, kSa, now, now + 3600, "https://example.com/other"));
  EXPECT_EQ(wrong_aud.body["error"], "invalid_grant");

  auto grant = Token(Jwt(key, kSa, now, now + 3600), "client_credentials");
  EXPECT_EQ(grant.body["error"], "unsupported_grant_type");

  // Tampered claims under the original signature.
  std::string jwt = Jwt(key, kSa, now, now + 3600);
  const size_t dot = jwt.find('.');
  const std::string tampered =
      jwt.substr(0, dot + 1) +
      TestRsaKey::Base64Url(R"({"iss":")" + std::string(kSa) +
                            R"(","scope":"x","aud":"http://h/token","iat":)" + std::to_string(now) +
                            R"(,"exp":)" + std::to_string(now + 60) + "}") +
      jwt.substr(jwt.find('.', dot + 1));
  EXPECT_EQ(Token(tampered).body["error_description"], "Invalid JWT Signature.");

  clock_.Advance(std::chrono::minutes(11));
  EXPECT_EQ(Call("GET", "aggregated/instances", "", token).status, 401)
      << "the token outlived token_lifetime";
}

TEST_F(GcpEmulatorTest, MetadataServerNeedsTheFlavorHeaderAndHandsOutTokens) {
  Emu("metadata_account: node@gpuscaler-test.iam.gserviceaccount.com\n");
  EmulatorRequest r;
  r.method = "GET";
  r.target = "/computeMetadata/v1/instance/service-accounts/default/token";
  EXPECT_EQ(emu_->Handle(r).status, 403);
  r.headers = {{"Metadata-Flavor", "Google"}};
  EmulatorResponse got = emu_->Handle(r);
  ASSERT_EQ(got.status, 200) << got.body;
  const json token = json::parse(got.body);
  EXPECT_EQ(token["token_type"], "Bearer");
  EXPECT_GT(token["expires_in"].get<int>(), 0);
  EXPECT_EQ(Call("GET", "aggregated/instances", "", token["access_token"]).status, 200);
  r.target = "/computeMetadata/v1/project/project-id";
  EXPECT_EQ(emu_->Handle(r).body, "gpuscaler-test");
}

}  // namespace
}  // namespace gpuscaler::sim::gcp_emulator_auth_test
