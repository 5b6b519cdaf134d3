// The Compute Engine emulator's request handler, without sockets: the OAuth
// token flow, the metadata server, instances, managed instance groups,
// operations, and the scenario's capacity, quota, throttling and
// preemptions, checked on Google's wire shapes.
#include "sim/cloud_emulator/gcp_emulator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cloud/gcp_test_key.h"

namespace gpuscaler::sim {
namespace {

using nlohmann::json;
using cloud::testing::TestRsaKey;

constexpr const char* kToken = "test-token";
constexpr const char* kSa = "scaler@gpuscaler-test.iam.gserviceaccount.com";
constexpr const char* kBase = "/compute/v1/projects/gpuscaler-test/";

WallTime Start() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-04T10:00:00Z", &t));
  return t;
}

int64_t Unix(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
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

std::string Reason(const json& error_body) { return error_body["error"]["errors"][0]["reason"]; }

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

TEST_F(GcpEmulatorTest, BulkInsertCreatesLabelledSpotInstancesAfterTheOperationLatency) {
  Emu("operation_latency: 5s\nboot_latency: 20s\n");
  auto op = BulkInsert("us-central1-a", {"gpu-1", "gpu-2"}, "g2-standard-8", "SPOT");
  ASSERT_EQ(op.status, 200) << op.raw.body;
  EXPECT_EQ(op.body["kind"], "compute#operation");
  EXPECT_EQ(op.body["operationType"], "bulkInsert");
  EXPECT_EQ(op.body["status"], "RUNNING");
  EXPECT_FALSE(op.body.contains("error"));

  auto inst = Get("zones/us-central1-a/instances/gpu-1");
  ASSERT_EQ(inst.status, 200);
  EXPECT_EQ(inst.body["status"], "PROVISIONING");
  EXPECT_EQ(inst.body["labels"]["gpuscaler-pool"], "l4");
  EXPECT_EQ(inst.body["scheduling"]["provisioningModel"], "SPOT");
  EXPECT_EQ(inst.body["scheduling"]["instanceTerminationAction"], "DELETE");
  EXPECT_EQ(inst.body["metadata"]["items"][0]["value"], "tok-1");
  EXPECT_EQ(inst.body["machineType"],
            "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/machineTypes/"
            "g2-standard-8");

  clock_.Advance(std::chrono::seconds(5));
  auto done = Operation(op);
  EXPECT_EQ(done.body["status"], "DONE");
  EXPECT_EQ(done.body["instancesBulkInsertOperationMetadata"]["perLocationStatus"]["zones/us-central1-a"]
                     ["createdVmCount"],
            2);
  EXPECT_EQ(Get("zones/us-central1-a/instances/gpu-1").body["status"], "STAGING");
  clock_.Advance(std::chrono::seconds(20));
  EXPECT_EQ(Get("zones/us-central1-a/instances/gpu-1").body["status"], "RUNNING");

  // The same name again: 409 alreadyExists.
  auto again = BulkInsert("us-central1-a", {"gpu-1"}, "g2-standard-8");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(Reason(again.body), "alreadyExists");
  // A bad name, an unknown zone.
  EXPECT_EQ(BulkInsert("us-central1-a", {"GPU_1"}, "g2-standard-8").status, 400);
  auto zone = BulkInsert("mars-north1-a", {"gpu-9"}, "g2-standard-8");
  EXPECT_EQ(zone.status, 400);
  EXPECT_EQ(Reason(zone.body), "invalid");
}

TEST_F(GcpEmulatorTest, NamePatternFillsCountAndMinCountIsAllOrNothing) {
  Emu("capacity:\n  - {machine_type: a2-highgpu-1g, zone: us-central1-b, limit: 2}\n");
  json body = {{"count", 3},
               {"namePattern", "a100-##"},
               {"instanceProperties", {{"machineType", "zones/us-central1-b/machineTypes/a2-highgpu-1g"}}}};
  auto all = Post("zones/us-central1-b/instances/bulkInsert", body);
  ASSERT_EQ(all.status, 200);
  clock_.Advance(std::chrono::seconds(2));
  auto op = Operation(all);
  ASSERT_EQ(op.body["status"], "DONE");
  ASSERT_TRUE(op.body.contains("error"));
  EXPECT_EQ(op.body["error"]["errors"][0]["code"], "ZONE_RESOURCE_POOL_EXHAUSTED");
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-01").status, 404) << "a failed bulkInsert keeps nothing";

  body["minCount"] = 1;
  auto some = Post("zones/us-central1-b/instances/bulkInsert", body);
  clock_.Advance(std::chrono::seconds(2));
  op = Operation(some);
  EXPECT_FALSE(op.body.contains("error"));
  EXPECT_EQ(op.body["instancesBulkInsertOperationMetadata"]["perLocationStatus"]["zones/us-central1-b"]
                   ["createdVmCount"],
            2);
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-01").status, 200);
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-02").status, 200);
  EXPECT_EQ(Get("zones/us-central1-b/instances/a100-03").status, 404);

  // int64 fields arrive as JSON strings from Google's clients; a wrong type is a 400, not a crash.
  json as_strings = {{"count", "1"},
                     {"minCount", "1"},
                     {"namePattern", "str-#"},
                     {"instanceProperties", {{"machineType", "g2-standard-4"}}}};
  EXPECT_EQ(Post("zones/us-central1-a/instances/bulkInsert", as_strings).status, 200);
  EXPECT_EQ(Get("zones/us-central1-a/instances/str-1").status, 200);
  as_strings["count"] = "many";
  EXPECT_EQ(Post("zones/us-central1-a/instances/bulkInsert", as_strings).status, 400);
  auto wrong_type =
      Post("zones/us-central1-a/instances/bulkInsert",
           {{"count", 1}, {"namePattern", "x-#"}, {"instanceProperties", {{"machineType", 7}}}});
  EXPECT_EQ(wrong_type.status, 400);
  EXPECT_EQ(Reason(wrong_type.body), "parseError");
  EXPECT_EQ(Call("POST", "zones/us-central1-a/instances/bulkInsert", "{not json").status, 400);
}

TEST_F(GcpEmulatorTest, CapacityErrorsWithDetailsAndTimeWindows) {
  Emu("capacity:\n"
      "  - {machine_type: a3-highgpu-8g, zone: us-central1-a, limit: 0, error: "
      "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS}\n"
      "  - {machine_type: g2-standard-4, zone: us-central1-a, provisioning_model: SPOT, limit: 0, until: "
      "1m}\n");
  auto a3 = BulkInsert("us-central1-a", {"h100-1"}, "a3-highgpu-8g");
  clock_.Advance(std::chrono::seconds(2));
  auto op = Operation(a3);
  ASSERT_TRUE(op.body.contains("error")) << op.body.dump();
  const json& e = op.body["error"]["errors"][0];
  EXPECT_EQ(e["code"], "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS");
  EXPECT_NE(e["message"].get<std::string>().find("does not have enough resources"), std::string::npos);
  EXPECT_EQ(e["errorDetails"][0]["errorInfo"]["reason"], "resource_availability");

  // Spot is short for a minute; on-demand of the same type is not.
  op = Operation(BulkInsert("us-central1-a", {"l4-spot"}, "g2-standard-4", "SPOT"));
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(Get("zones/us-central1-a/instances/l4-spot").status, 404);
  auto od = BulkInsert("us-central1-a", {"l4-od"}, "g2-standard-4", "STANDARD");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(od).body.contains("error"));
  clock_.Advance(std::chrono::minutes(1));
  auto later = BulkInsert("us-central1-a", {"l4-spot"}, "g2-standard-4", "SPOT");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(later).body.contains("error")) << "the limit ended at `until`";
}

TEST_F(GcpEmulatorTest, RegionalGpuQuotaCountsGpusAndSpotSeparately) {
  Emu("quotas:\n  - {region: us-central1, metric: NVIDIA_L4_GPUS, limit: 3}\n"
      "  - {region: us-central1, metric: PREEMPTIBLE_NVIDIA_L4_GPUS, limit: 8}\n");
  auto two = BulkInsert("us-central1-a", {"l4-a"}, "g2-standard-24");  // 2 L4
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(two).body.contains("error"));
  auto over = BulkInsert("us-central1-b", {"l4-b"}, "g2-standard-24");  // 2 more in the same region
  clock_.Advance(std::chrono::seconds(2));
  auto op = Operation(over);
  ASSERT_TRUE(op.body.contains("error"));
  EXPECT_EQ(op.body["error"]["errors"][0]["code"], "QUOTA_EXCEEDED");
  EXPECT_EQ(op.body["error"]["errors"][0]["message"],
            "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 3.0 in region us-central1.");
  EXPECT_EQ(op.body["error"]["errors"][0]["errorDetails"][0]["quotaInfo"]["dimensions"]["region"],
            "us-central1");
  auto one = BulkInsert("us-central1-b", {"l4-c"}, "g2-standard-8");  // 1 fits
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(one).body.contains("error"));
  auto spot = BulkInsert("us-central1-b", {"l4-spot"}, "g2-standard-48", "SPOT");  // 4, preemptible quota
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(spot).body.contains("error"));

  // regions.get shows limit and usage per metric.
  auto region = Get("regions/us-central1");
  ASSERT_EQ(region.status, 200) << region.raw.body;
  EXPECT_EQ(region.body["kind"], "compute#region");
  bool seen = false;
  for (const auto& q : region.body["quotas"]) {
    if (q["metric"] != "NVIDIA_L4_GPUS") continue;
    seen = true;
    EXPECT_EQ(q["limit"], 3.0);
    EXPECT_EQ(q["usage"], 3.0);
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(Get("regions/europe-west4").status, 404);
}

TEST_F(GcpEmulatorTest, AQuotaRaisedLaterLetsCreationsThrough) {
  Emu("quotas:\n  - {region: us-central1, metric: NVIDIA_A100_GPUS, limit: 0}\n"
      "  - {region: us-central1, metric: NVIDIA_A100_GPUS, limit: 8, from: 5m}\n");
  auto early = BulkInsert("us-central1-a", {"a-1"}, "a2-highgpu-4g");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(Operation(early).body["error"]["errors"][0]["code"], "QUOTA_EXCEEDED");
  EXPECT_EQ(Get("regions/us-central1").body["quotas"][0]["limit"], 0.0);
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(Get("regions/us-central1").body["quotas"][0]["limit"], 8.0);
  auto later = BulkInsert("us-central1-a", {"a-1"}, "a2-highgpu-4g");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(later).body.contains("error"));
}

TEST_F(GcpEmulatorTest, RequestIdMakesACallIdempotent) {
  Emu();
  const std::string id = "?requestId=3f2504e0-4f89-11d3-9a0c-0305e82c3301";
  auto first = BulkInsert("us-central1-a", {"idem-1"}, "g2-standard-4", "STANDARD", id);
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body["clientOperationId"], "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
  auto second = BulkInsert("us-central1-a", {"idem-1"}, "g2-standard-4", "STANDARD", id);
  ASSERT_EQ(second.status, 200) << "a retry with the same requestId is not a conflict";
  EXPECT_EQ(second.body["name"], first.body["name"]);
  EXPECT_EQ(emu_->stats().created, 1);
  auto del1 =
      Call("DELETE", "zones/us-central1-a/instances/idem-1?requestId=9d2504e0-4f89-11d3-9a0c-0305e82c3301");
  auto del2 =
      Call("DELETE", "zones/us-central1-a/instances/idem-1?requestId=9d2504e0-4f89-11d3-9a0c-0305e82c3301");
  EXPECT_EQ(del1.body["name"], del2.body["name"]);
  EXPECT_EQ(BulkInsert("us-central1-a", {"x"}, "g2-standard-4", "STANDARD", "?requestId=not-a-uuid").status,
            400);
  EXPECT_EQ(BulkInsert("us-central1-a", {"x"}, "g2-standard-4", "STANDARD",
                       "?requestId=00000000-0000-0000-0000-000000000000")
                .status,
            400);
}

TEST_F(GcpEmulatorTest, DeleteStopsThenRemovesTheInstance) {
  Emu("delete_latency: 30s\n");
  BulkInsert("us-central1-a", {"del-1"}, "g2-standard-4");
  clock_.Advance(std::chrono::minutes(1));
  auto op = Call("DELETE", "zones/us-central1-a/instances/del-1");
  ASSERT_EQ(op.status, 200);
  EXPECT_EQ(op.body["operationType"], "delete");
  EXPECT_EQ(op.body["status"], "RUNNING");
  EXPECT_EQ(Get("zones/us-central1-a/instances/del-1").body["status"], "STOPPING");
  clock_.Advance(std::chrono::seconds(30));
  EXPECT_EQ(Operation(op).body["status"], "DONE");
  auto gone = Get("zones/us-central1-a/instances/del-1");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(Reason(gone.body), "notFound");
  EXPECT_EQ(gone.body["error"]["message"],
            "The resource 'projects/gpuscaler-test/zones/us-central1-a/instances/del-1' was not found");
  EXPECT_EQ(Call("DELETE", "zones/us-central1-a/instances/del-1").status, 404);
}

TEST_F(GcpEmulatorTest, AggregatedListFiltersOnLabelsAndPages) {
  Emu();
  BulkInsert("us-central1-a", {"p-1", "p-2"}, "g2-standard-4");
  BulkInsert("us-central1-c", {"p-3"}, "g2-standard-4");
  json other = {
      {"count", 1},
      {"perInstanceProperties", {{"q-1", json::object()}}},
      {"instanceProperties", {{"machineType", "g2-standard-4"}, {"labels", {{"gpuscaler-cluster", "dev"}}}}}};
  Post("zones/us-central1-a/instances/bulkInsert", other);

  auto all = Get("aggregated/instances?filter=labels.gpuscaler-cluster%20%3D%20%22prod%22");
  ASSERT_EQ(all.status, 200) << all.raw.body;
  EXPECT_EQ(all.body["kind"], "compute#instanceAggregatedList");
  EXPECT_EQ(all.body["items"]["zones/us-central1-a"]["instances"].size(), 2u);
  EXPECT_EQ(all.body["items"]["zones/us-central1-c"]["instances"].size(), 1u);
  EXPECT_EQ(all.body["items"]["zones/us-central1-b"]["warning"]["code"], "NO_RESULTS_ON_PAGE");
  EXPECT_FALSE(all.body.contains("nextPageToken"));

  auto both =
      Get("aggregated/instances?filter=" + std::string("(labels.gpuscaler-cluster%20%3D%20%22prod%22)%20") +
          "(labels.gpuscaler-pool%20!%3D%20%22l4%22)");
  ASSERT_EQ(both.status, 200);
  EXPECT_FALSE(both.body["items"]["zones/us-central1-a"].contains("instances"));
  auto dev = Get("aggregated/instances?filter=labels.gpuscaler-cluster%3Ddev%20AND%20name%3Dq-*");
  EXPECT_EQ(dev.body["items"]["zones/us-central1-a"]["instances"][0]["name"], "q-1");

  // Paging: one at a time, every instance once.
  std::vector<std::string> seen;
  std::string page = "aggregated/instances?maxResults=1&filter=labels.gpuscaler-cluster%3D%22prod%22";
  for (int k = 0; k < 10; ++k) {
    auto a = Get(page);
    ASSERT_EQ(a.status, 200);
    for (const auto& [scope, v] : a.body["items"].items()) {
      for (const auto& i : v.value("instances", json::array())) seen.push_back(i["name"]);
    }
    if (!a.body.contains("nextPageToken")) break;
    page = "aggregated/instances?maxResults=1&filter=labels.gpuscaler-cluster%3D%22prod%22&pageToken=" +
           a.body["nextPageToken"].get<std::string>();
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"p-1", "p-2", "p-3"}));

  auto bad_filter = Get("aggregated/instances?filter=labels.x%20~%20y");
  EXPECT_EQ(bad_filter.status, 400);
  EXPECT_NE(bad_filter.body["error"]["message"].get<std::string>().find("filter"), std::string::npos);
  EXPECT_EQ(Get("aggregated/instances?pageToken=forged").status, 400);
  EXPECT_EQ(Get("aggregated/instances?maxResults=501").status, 400);
}

TEST_F(GcpEmulatorTest, ManagedGroupCreatesNamedInstancesAndReportsLastAttemptErrors) {
  Emu("mig_retry_interval: 10s\nboot_latency: 10s\n"
      "managed_instance_groups:\n"
      "  - {name: l4-pool-a, zone: us-central1-a, machine_type: g2-standard-8, provisioning_model: SPOT,\n"
      "     termination_action: DELETE, labels: {gpuscaler-pool: l4}}\n"
      "capacity:\n  - {machine_type: g2-standard-8, zone: us-central1-a, limit: 1, until: 30s}\n");
  auto op = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/createInstances",
                 json::parse(R"({"instances": [{"name": "node-1",
                                                "preservedState": {"metadata": {"gpuscaler-intent": "launch-7"}}},
                                               {"name": "node-2"}]})"));
  ASSERT_EQ(op.status, 200) << op.raw.body;
  EXPECT_EQ(op.body["operationType"], "compute.instanceGroupManagers.createInstances");

  auto list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["managedInstances"].size(), 2u);
  const json& first = list.body["managedInstances"][0];
  EXPECT_EQ(first["name"], "node-1");
  EXPECT_EQ(first["currentAction"], "CREATING");
  EXPECT_EQ(first["instanceStatus"], "PROVISIONING");
  const json& second = list.body["managedInstances"][1];
  EXPECT_EQ(second["currentAction"], "CREATING");
  EXPECT_FALSE(second.contains("instanceStatus"));
  EXPECT_EQ(second["lastAttempt"]["errors"]["errors"][0]["code"], "ZONE_RESOURCE_POOL_EXHAUSTED");

  auto group = Get("zones/us-central1-a/instanceGroupManagers/l4-pool-a");
  EXPECT_EQ(group.body["kind"], "compute#instanceGroupManager");
  EXPECT_EQ(group.body["targetSize"], 2);
  EXPECT_EQ(group.body["currentActions"]["creating"], 2);
  EXPECT_EQ(group.body["status"]["isStable"], false);

  // The capacity limit ends at 30 s; the retry after that creates node-2.
  clock_.Advance(std::chrono::seconds(31));
  list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  EXPECT_EQ(list.body["managedInstances"][0]["currentAction"], "NONE");
  EXPECT_EQ(list.body["managedInstances"][0]["instanceStatus"], "RUNNING");
  EXPECT_FALSE(list.body["managedInstances"][1].contains("lastAttempt"));
  EXPECT_EQ(list.body["managedInstances"][1]["instanceStatus"], "PROVISIONING");
  auto inst = Get("zones/us-central1-a/instances/node-1");
  EXPECT_EQ(inst.body["labels"]["gpuscaler-pool"], "l4");
  // preservedState.metadata becomes instance metadata, beside the group's created-by.
  ASSERT_EQ(inst.body["metadata"]["items"].size(), 2u);
  EXPECT_EQ(inst.body["metadata"]["items"][0], (json{{"key", "gpuscaler-intent"}, {"value", "launch-7"}}));
  EXPECT_EQ(inst.body["metadata"]["items"][1]["key"], "created-by");
  EXPECT_EQ(inst.body["scheduling"]["provisioningModel"], "SPOT");

  // Names are unique; deleteInstances takes members only.
  EXPECT_EQ(Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/createInstances",
                 {{"instances", {{{"name", "node-1"}}}}})
                .status,
            409);
  auto stranger = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/deleteInstances",
                       {{"instances", {"zones/us-central1-a/instances/nobody"}}});
  EXPECT_EQ(stranger.status, 400);
  EXPECT_EQ(Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/deleteInstances",
                 {{"instances", {"zones/us-central1-a/instances/nobody"}},
                  {"skipInstancesOnValidationError", true}})
                .status,
            200);

  auto del = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/deleteInstances",
                  {{"instances",
                    {"https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/"
                     "instances/node-1"}}});
  ASSERT_EQ(del.status, 200);
  EXPECT_EQ(del.body["operationType"], "compute.instanceGroupManagers.deleteInstances");
  list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  EXPECT_EQ(list.body["managedInstances"][0]["currentAction"], "DELETING");
  EXPECT_EQ(Get("zones/us-central1-a/instanceGroupManagers/l4-pool-a").body["targetSize"], 1);
  clock_.Advance(std::chrono::minutes(1));
  list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 1u);
  EXPECT_EQ(list.body["managedInstances"][0]["name"], "node-2");
  EXPECT_EQ(Get("zones/us-central1-a/instances/node-1").status, 404);
  EXPECT_EQ(Get("zones/us-central1-a/instanceGroupManagers/nope").status, 404);
}

TEST_F(GcpEmulatorTest, ResizeGrowsWithGeneratedNamesAndShrinksCreatingMembersFirst) {
  Emu("managed_instance_groups:\n  - {name: a100, zone: us-central1-b, machine_type: a2-highgpu-1g, "
      "base_instance_name: gke-a100}\n"
      "capacity:\n  - {machine_type: a2-highgpu-1g, limit: 2}\n");
  auto up = Post("zones/us-central1-b/instanceGroupManagers/a100/resize?size=3");
  ASSERT_EQ(up.status, 200) << up.raw.body;
  EXPECT_EQ(up.body["operationType"], "compute.instanceGroupManagers.resize");
  auto list = Post("zones/us-central1-b/instanceGroupManagers/a100/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 3u);
  for (const auto& m : list.body["managedInstances"])
    EXPECT_EQ(m["name"].get<std::string>().rfind("gke-a100-", 0), 0u);
  EXPECT_TRUE(list.body["managedInstances"][2].contains("lastAttempt")) << "the third finds no capacity";
  // Down to 2: the member without a VM goes first, nothing running is deleted.
  Post("zones/us-central1-b/instanceGroupManagers/a100/resize?size=2");
  list = Post("zones/us-central1-b/instanceGroupManagers/a100/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 2u);
  for (const auto& m : list.body["managedInstances"]) EXPECT_NE(m["currentAction"], "DELETING");
  EXPECT_EQ(Post("zones/us-central1-b/instanceGroupManagers/a100/resize?size=-1").status, 400);
  EXPECT_EQ(Post("zones/us-central1-b/instanceGroupManagers/a100/resize").status, 400);
}

TEST_F(GcpEmulatorTest, ScheduledPreemptionStopsDeletesAndLogsAnOperation) {
  Emu("boot_latency: 10s\n"
      "preemptions:\n  - {at: 5m, machine_type: g2-standard-4, count: 2, notice: 30s}\n"
      "managed_instance_groups:\n  - {name: mig, zone: us-central1-c, machine_type: g2-standard-4, "
      "provisioning_model: SPOT,\n"
      "     termination_action: STOP}\n");
  BulkInsert("us-central1-a", {"spot-del"}, "g2-standard-4", "SPOT");  // action DELETE
  json stop = {{"count", 1},
               {"perInstanceProperties", {{"spot-stop", json::object()}}},
               {"instanceProperties",
                {{"machineType", "g2-standard-4"},
                 {"scheduling", {{"provisioningModel", "SPOT"}, {"instanceTerminationAction", "STOP"}}}}}};
  Post("zones/us-central1-b/instances/bulkInsert", stop);
  BulkInsert("us-central1-a", {"standard"}, "g2-standard-4", "STANDARD");
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(Get("zones/us-central1-a/instances/spot-del").body["status"], "STOPPING");
  EXPECT_EQ(Get("zones/us-central1-b/instances/spot-stop").body["status"], "STOPPING");
  EXPECT_EQ(Get("zones/us-central1-a/instances/standard").body["status"], "RUNNING");

  auto ops = Get("zones/us-central1-a/operations?filter=operationType%3D%22compute.instances.preempted%22");
  ASSERT_EQ(ops.status, 200) << ops.raw.body;
  ASSERT_EQ(ops.body["items"].size(), 1u);
  EXPECT_EQ(ops.body["items"][0]["status"], "DONE");
  EXPECT_EQ(
      ops.body["items"][0]["targetLink"],
      "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/instances/spot-del");
  EXPECT_EQ(Get("zones/us-central1-c/operations?filter=operationType%3D%22compute.instances.preempted%22")
                .body.contains("items"),
            false);

  clock_.Advance(std::chrono::seconds(30));
  EXPECT_EQ(Get("zones/us-central1-a/instances/spot-del").status, 404) << "instanceTerminationAction DELETE";
  EXPECT_EQ(Get("zones/us-central1-b/instances/spot-stop").body["status"], "TERMINATED");
  EXPECT_EQ(emu_->stats().preempted, 2);

  // A group member is preempted and recreated under its name.
  Post("zones/us-central1-c/instanceGroupManagers/mig/createInstances", {{"instances", {{{"name", "m-1"}}}}});
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_TRUE(emu_->Preempt("us-central1-c", "m-1").ok());
  EXPECT_FALSE(emu_->Preempt("us-central1-a", "standard").ok()) << "only Spot VMs are preempted";
  clock_.Advance(std::chrono::seconds(31));
  auto list = Post("zones/us-central1-c/instanceGroupManagers/mig/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 1u);
  EXPECT_EQ(list.body["managedInstances"][0]["name"], "m-1");
  EXPECT_EQ(list.body["managedInstances"][0]["currentAction"], "RECREATING");
}

TEST_F(GcpEmulatorTest, ThrottlingAndServerErrorsUseGoogleErrorShapes) {
  Emu("throttle: {every: 2}\n");
  EXPECT_EQ(Get("aggregated/instances").status, 200);
  auto limited = Get("aggregated/instances");
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(Reason(limited.body), "rateLimitExceeded");
  EXPECT_EQ(limited.body["error"]["errors"][0]["domain"], "usageLimits");
  EXPECT_EQ(emu_->stats().throttled, 1);
  Emu("server_error_rate: 1\n");
  auto unavailable = Get("aggregated/instances");
  EXPECT_EQ(unavailable.status, 503);
  EXPECT_EQ(Reason(unavailable.body), "backendError");
}

TEST_F(GcpEmulatorTest, OperationsListPagesAndWaitAnswersTheCurrentState) {
  Emu("operation_latency: 10s\n");
  auto a = BulkInsert("us-central1-a", {"o-1"}, "g2-standard-4");
  BulkInsert("us-central1-a", {"o-2"}, "g2-standard-4");
  auto page = Get("zones/us-central1-a/operations?maxResults=1");
  ASSERT_EQ(page.body["items"].size(), 1u);
  ASSERT_TRUE(page.body.contains("nextPageToken"));
  auto rest = Get("zones/us-central1-a/operations?maxResults=1&pageToken=" +
                  page.body["nextPageToken"].get<std::string>());
  ASSERT_EQ(rest.body["items"].size(), 1u);
  EXPECT_NE(rest.body["items"][0]["name"], page.body["items"][0]["name"]);
  const std::string wait = "zones/us-central1-a/operations/" + a.body["name"].get<std::string>() + "/wait";
  EXPECT_EQ(Post(wait).body["status"], "RUNNING");
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_EQ(Post(wait).body["status"], "DONE");
  EXPECT_EQ(Get("zones/us-central1-a/operations/operation-nope").status, 404);
  EXPECT_EQ(Get("/compute/v1/projects/someone-else/aggregated/instances").status, 404);
}

TEST_F(GcpEmulatorTest, BlockingWaitReturnsWhenDoneOrAtTheCap) {
  Emu("operation_latency: 10s\n");
  std::chrono::milliseconds slept{0};
  bool keep_going = true;
  emu_->EnableBlockingWait(std::chrono::seconds(4), [&](std::chrono::milliseconds d) {
    slept += d;
    clock_.Advance(std::chrono::duration_cast<Seconds>(d + std::chrono::milliseconds(999)));  // whole seconds
    return keep_going;
  });
  auto a = BulkInsert("us-central1-a", {"w-1"}, "g2-standard-4");
  const std::string wait = "zones/us-central1-a/operations/" + a.body["name"].get<std::string>() + "/wait";
  auto capped = Post(wait);
  EXPECT_EQ(capped.body["status"], "RUNNING") << "the cap (4 s) ends the wait before the 10 s operation";
  EXPECT_GE(clock_.WallNow() - Start(), std::chrono::seconds(4));
  EXPECT_LT(clock_.WallNow() - Start(), std::chrono::seconds(10));
  EXPECT_EQ(Post(wait).body["status"], "RUNNING");  // 8 s
  auto done = Post(wait);
  EXPECT_EQ(done.body["status"], "DONE");
  EXPECT_GE(clock_.WallNow() - Start(), std::chrono::seconds(10));
  EXPECT_LT(clock_.WallNow() - Start(), std::chrono::seconds(12))
      << "the wait ends when the operation is DONE";
  EXPECT_GT(slept.count(), 0);
  // get never blocks; a stop (shutdown) ends a wait at once.
  auto b = BulkInsert("us-central1-a", {"w-2"}, "g2-standard-4");
  const WallTime before = clock_.WallNow();
  EXPECT_EQ(Get("zones/us-central1-a/operations/" + b.body["name"].get<std::string>()).body["status"],
            "RUNNING");
  EXPECT_EQ(clock_.WallNow(), before);
  keep_going = false;
  auto stopped = Post("zones/us-central1-a/operations/" + b.body["name"].get<std::string>() + "/wait");
  EXPECT_EQ(stopped.body["status"], "RUNNING");
  EXPECT_LE(clock_.WallNow() - before, std::chrono::seconds(1));
  EmulatorRequest r{"POST", "/compute/v1/projects/p/zones/z/operations/op/wait", {}, ""};
  EXPECT_TRUE(GcpEmulator::IsWait(r));
  r.method = "GET";
  EXPECT_FALSE(GcpEmulator::IsWait(r));
}

TEST(GcpScenarioTest, ErrorsNameTheKeyAndLine) {
  auto unknown = ParseGcpScenario("project: p\nzonez: [a]\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("line 2"), std::string::npos) << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("zonez"), std::string::npos);
  auto model = ParseGcpScenario(
      "managed_instance_groups:\n  - {name: m, zone: us-central1-a, provisioning_model: spot}\n");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message().find("managed_instance_groups[0]"), std::string::npos)
      << model.error().message();
  auto zone = ParseGcpScenario("capacity:\n  - {zone: europe-west4-a, limit: 1}\n");
  ASSERT_FALSE(zone.ok());
  EXPECT_NE(zone.error().message().find("not one of `zones`"), std::string::npos);
  auto key = ParseGcpScenario("service_accounts:\n  - {email: a@b, public_key: nope}\n");
  ASSERT_FALSE(key.ok());
  auto error = ParseGcpScenario("capacity:\n  - {limit: 1, error: InsufficientInstanceCapacity}\n");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(*EmulatorScenarioProvider("provider: gcp\n"), "gcp");
  EXPECT_EQ(*EmulatorScenarioProvider("region: us-east-1\n"), "");
  EXPECT_EQ(*EmulatorScenarioProvider("provider: azure\n"), "azure");
  EXPECT_FALSE(EmulatorScenarioProvider("provider: openstack\n").ok());
}

TEST(GcpMachineGpusTest, KnowsTheAcceleratorOptimizedSeries) {
  GcpScenario s;
  EXPECT_EQ(GcpMachineGpus(s, "a2-highgpu-4g"), (std::pair<std::string, int>{"NVIDIA_A100_GPUS", 4}));
  EXPECT_EQ(GcpMachineGpus(s, "a2-ultragpu-8g"), (std::pair<std::string, int>{"NVIDIA_A100_80GB_GPUS", 8}));
  EXPECT_EQ(GcpMachineGpus(s, "a3-highgpu-8g"), (std::pair<std::string, int>{"NVIDIA_H100_GPUS", 8}));
  EXPECT_EQ(GcpMachineGpus(s, "g2-standard-24"), (std::pair<std::string, int>{"NVIDIA_L4_GPUS", 2}));
  EXPECT_EQ(GcpMachineGpus(s, "g2-standard-32"), (std::pair<std::string, int>{"NVIDIA_L4_GPUS", 1}));
  EXPECT_EQ(GcpMachineGpus(s, "n1-standard-8").second, 0);
  s.machine_gpus["n1-custom"] = {"NVIDIA_T4_GPUS", 2};
  EXPECT_EQ(GcpMachineGpus(s, "n1-custom").second, 2);
}

}  // namespace
}  // namespace gpuscaler::sim
