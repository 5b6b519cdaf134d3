// What the tests of the Compute Engine emulator's request handler share
// (gcp_emulator_auth, _instances, _groups and _scenario_test.cc): GcpEmulatorTest,
// a GcpEmulator on a ManualClock driven without sockets (Call with a bearer
// token, bulkInsert, an operation read back, the OAuth token flow with JWTs
// signed by a test key), the clock's start, and Reason, the reason of a Google
// error body.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cloud/gcp_test_key.h"
#include "sim/cloud_emulator/gcp_emulator.h"

namespace gpuscaler::sim::gcp_emulator_testing {

using nlohmann::json;
using cloud::testing::TestRsaKey;

inline constexpr const char* kToken = "test-token";
inline constexpr const char* kBase = "/compute/v1/projects/gpuscaler-test/";

inline WallTime Start() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-04T10:00:00Z", &t));
  return t;
}

class GcpEmulatorTest : public ::testing::Test {
 protected:
  GcpEmulatorTest() : clock_(Start()) {}

  GcpEmulator& Emu(const std::string& yaml = "") {
    auto s = ParseGcpScenario("access_tokens: [test-token]\n" + yaml);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    emu_ = std::make_unique<GcpEmulator>(std::move(*s), clock_);
    return *emu_;
  }

  struct Answer {
    int status = 0;
    json body;
    EmulatorResponse raw;
  };
  Answer Call(const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& token = kToken) {
    EmulatorRequest r;
    r.method = method;
    r.target = path.rfind("/", 0) == 0 ? path : kBase + path;
    if (!token.empty()) r.headers.emplace_back("Authorization", "Bearer " + token);
    if (!body.empty()) r.headers.emplace_back("Content-Type", "application/json");
    r.body = body;
    Answer a;
    a.raw = emu_->Handle(r);
    a.status = a.raw.status;
    a.body = json::parse(a.raw.body, nullptr, false);
    return a;
  }
  Answer Get(const std::string& path) { return Call("GET", path); }
  Answer Post(const std::string& path, const json& body = json::object()) {
    return Call("POST", path, body.dump());
  }

  Answer BulkInsert(const std::string& zone, const std::vector<std::string>& names,
                    const std::string& machine_type, const std::string& model = "STANDARD",
                    const std::string& query = "") {
    json per = json::object();
    for (const auto& n : names) per[n] = json::object();
    json body = {{"count", names.size()},
                 {"perInstanceProperties", per},
                 {"instanceProperties",
                  {{"machineType", machine_type},
                   {"labels", {{"gpuscaler-cluster", "prod"}, {"gpuscaler-pool", "l4"}}},
                   {"metadata", {{"items", {{{"key", "gpuscaler-intent"}, {"value", "tok-1"}}}}}},
                   {"scheduling", {{"provisioningModel", model}, {"instanceTerminationAction", "DELETE"}}}}}};
    return Post("zones/" + zone + "/instances/bulkInsert" + query, body);
  }
  Answer Operation(const Answer& a) {
    return Get("zones/" +
               a.body["zone"].get<std::string>().substr(a.body["zone"].get<std::string>().rfind('/') + 1) +
               "/operations/" + a.body["name"].get<std::string>());
  }
  std::string Jwt(const TestRsaKey& key, const std::string& iss, int64_t iat, int64_t exp,
                  const std::string& aud = "http://127.0.0.1:1/token") {
    json claims = {{"iss", iss},
                   {"scope", "https://www.googleapis.com/auth/compute"},
                   {"aud", aud},
                   {"iat", iat},
                   {"exp", exp}};
    return key.SignJwt(R"({"alg":"RS256","typ":"JWT","kid":"k1"})", claims.dump());
  }
  Answer Token(const std::string& assertion,
               const std::string& grant = "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer") {
    EmulatorRequest r;
    r.method = "POST";
    r.target = "/token";
    r.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
    r.body = "grant_type=" + grant + "&assertion=" + assertion;
    Answer a;
    a.raw = emu_->Handle(r);
    a.status = a.raw.status;
    a.body = json::parse(a.raw.body, nullptr, false);
    return a;
  }

  ManualClock clock_;
  std::unique_ptr<GcpEmulator> emu_;
};

inline std::string Reason(const json& error_body) { return error_body["error"]["errors"][0]["reason"]; }

}  // namespace gpuscaler::sim::gcp_emulator_testing
