// AzureClient against a fake transport: retries of throttles and 5xx with
// Retry-After, ARM error bodies and their categories, and long-running
// operations (Azure-AsyncOperation, Location).
#include "gpuscaler/cloud/azure_client.h"

#include <gtest/gtest.h>

#include "gpuscaler/model/clock.h"
#include "tests/cloud/azure_fake_arm.h"

namespace gpuscaler::cloud::azure_client_test {
namespace {

using azure_testing::ArmJson;
using azure_testing::AzureTestData;
using nlohmann::json;

constexpr const char* kPath = "subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/v";
constexpr const char* kSecretToken = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.secret-bearer";

class StaticToken final : public TokenSource {
 public:
  Result<AccessToken> Get(WallTime now) override { return AccessToken{kSecretToken, now + Seconds(3600)}; }
  std::string Name() const override { return "static"; }
};

struct Rig {
  testing::FakeTransport transport;
  StaticToken tokens;
  ManualClock clock{FromUnixSeconds(1765108800)};
  std::vector<std::chrono::milliseconds> sleeps;
  AzureClient client;

  Rig()
      : client(Options(), transport, tokens, clock, [this](std::chrono::milliseconds d) {
          sleeps.push_back(d);
          clock.Advance(std::chrono::duration_cast<Seconds>(d));
        }) {}
  static AzureClientOptions Options() {
    AzureClientOptions o;
    o.endpoint = azure_testing::kArmTestEndpoint;
    o.operation_timeout = std::chrono::seconds(600);
    o.poll_interval = std::chrono::milliseconds(3000);
    return o;
  }
  bool SleptAtLeast(std::chrono::milliseconds d) const {
    return std::any_of(sleeps.begin(), sleeps.end(), [&](auto s) { return s >= d; });
  }
};

TEST(AzureClient, CallsCarryTheBearerTokenAndTheApiVersion) {
  Rig rig;
  rig.transport.handler = [](const TransportRequest&) { return ArmJson(200, AzureTestData("scale_set.json")); };
  auto got = rig.client.Call("GET", kPath, kComputeApiVersion);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->body["sku"]["name"], "Standard_NC24ads_A100_v4");
  const TransportRequest& r = rig.transport.requests.at(0);
  EXPECT_EQ(r.url, std::string(azure_testing::kArmTestEndpoint) + kPath + "?api-version=2026-04-01");
  EXPECT_EQ(HeaderValue(r.headers, "Authorization"), std::string("Bearer ") + kSecretToken);
}

TEST(AzureClient, ThrottlingIsRetriedNoSoonerThanRetryAfter) {
  Rig rig;
  int calls = 0;
  rig.transport.handler = [&](const TransportRequest&) {
    if (calls++ < 2) return ArmJson(429, AzureTestData("error_throttled.json"), {{"Retry-After", "17"}});
    return ArmJson(200, AzureTestData("scale_set.json"));
  };
  auto got = rig.client.Call("GET", kPath, kComputeApiVersion);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(rig.transport.requests.size(), 3u);
  EXPECT_EQ(rig.client.retries(), 2);
  EXPECT_GE(std::count_if(rig.sleeps.begin(), rig.sleeps.end(),
                          [](auto s) { return s >= std::chrono::milliseconds(17000); }),
            2);
}

TEST(AzureClient, ServerErrorsAreRetriedAndClientErrorsAreNot) {
  Rig rig;
  int calls = 0;
  rig.transport.handler = [&](const TransportRequest&) {
    if (calls++ == 0)
      return ArmJson(503, json{{"error", {{"code", "ServiceUnavailable"}, {"message", "try later"}}}});
    return ArmJson(200, AzureTestData("scale_set.json"));
  };
  ASSERT_TRUE(rig.client.Call("GET", kPath, kComputeApiVersion).ok());
  EXPECT_EQ(rig.transport.requests.size(), 2u);

  Rig denied;
  denied.transport.handler = [](const TransportRequest&) {
    json body = AzureTestData("error_authorization_failed.json");
    body["error"]["message"] = body["error"]["message"].get<std::string>() + " token " + kSecretToken;
    return ArmJson(403, body);
  };
  auto got = denied.client.Call("PATCH", kPath, kComputeApiVersion, json::object());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(denied.transport.requests.size(), 1u);
  EXPECT_EQ(got.error().category(), ErrorCategory::kAuth);
  const std::string& m = got.error().message();
  EXPECT_NE(m.find("PATCH /subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/v"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("HTTP 403"), std::string::npos) << m;
  EXPECT_NE(m.find("AuthorizationFailed"), std::string::npos) << m;
  EXPECT_EQ(m.find(kSecretToken), std::string::npos) << m;
}

TEST(AzureClient, AListFollowsNextLinkOnTheEndpointsOriginOnly) {
  Rig rig;
  rig.transport.handler = [](const TransportRequest& r) {
    json page = AzureTestData("machine_list.json");
    if (r.url.find("skipToken") == std::string::npos) {
      page["nextLink"] = "https://arm.test/subscriptions/s/machines?api-version=2026-06-01&%24skipToken=c2tpcA";
    } else {
      page["value"][0]["name"] = "aks-gpuspot-25481572-vmss000001";
      page.erase("nextLink");
    }
    return ArmJson(200, page);
  };
  auto all = rig.client.List("subscriptions/s/machines", kContainerServiceApiVersion);
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1]["name"], "aks-gpuspot-25481572-vmss000001");
  EXPECT_EQ(rig.transport.requests.at(1).url,
            "https://arm.test/subscriptions/s/machines?api-version=2026-06-01&%24skipToken=c2tpcA");

  Rig elsewhere;
  elsewhere.transport.handler = [](const TransportRequest&) {
    json page = AzureTestData("machine_list.json");
    page["nextLink"] = "http://xxxx.azure.com?encodedToken=c2tpcFRva2VuPTE";  // another host
    return ArmJson(200, page);
  };
  auto refused = elsewhere.client.List("subscriptions/s/machines", kContainerServiceApiVersion);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(elsewhere.transport.requests.size(), 1u);
}

TEST(AzureClient, ErrorCodesMapToTheCategoriesTheControllerBranchesOn) {
  struct Case {
    std::string code;
    std::string message;
    int status;
    ErrorCategory want;
  };
  const std::vector<Case> cases = {
      {"AllocationFailed", "", 200, ErrorCategory::kCapacity},
      {"ZonalAllocationFailed", "", 0, ErrorCategory::kCapacity},
      {"OverconstrainedAllocationRequest", "", 0, ErrorCategory::kCapacity},
      {"SkuNotAvailable", "", 409, ErrorCategory::kCapacity},
      {"QuotaExceeded", "", 400, ErrorCategory::kCapacity},
      {"OperationNotAllowed", "Operation could not be completed as it results in exceeding approved standardNCADSA100v4Family Cores quota.", 409, ErrorCategory::kCapacity},
      {"OperationNotAllowed", "Operation is not allowed because there's an in progress scale operation", 409, ErrorCategory::kTransient},
      {"SubscriptionRequestsThrottled", "", 429, ErrorCategory::kThrottled},
      {"InternalServerError", "", 500, ErrorCategory::kTransient},
      {"AuthorizationFailed", "", 403, ErrorCategory::kAuth},
      {"ResourceNotFound", "", 404, ErrorCategory::kNotFound},
      {"InvalidParameter", "", 400, ErrorCategory::kConfig},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.code + " " + std::to_string(c.status));
    EXPECT_EQ(ClassifyAzureError(c.code, c.message, c.status), c.want);
  }
  // AKS names the scale set's capacity error among its details.
  const Error wrapped = AzureErrorFrom("PUT agentPools/gpu", 0, AzureTestData("error_aks_scale_failed.json"));
  EXPECT_EQ(wrapped.category(), ErrorCategory::kCapacity);
  EXPECT_NE(wrapped.message().find("OverconstrainedAllocationRequest"), std::string::npos);
}

TEST(AzureClient, ALongRunningOperationIsFollowedThroughAzureAsyncOperationFirst) {
  Rig rig;
  int polls = 0;
  rig.transport.handler = [&](const TransportRequest& r) {
    if (r.method == "PATCH")
      return ArmJson(200, AzureTestData("scale_set.json"),
                     {{"Azure-AsyncOperation", "https://arm.test/operations/op1?api-version=2026-04-01"},
                      {"Location", "https://arm.test/operationresults/op1?api-version=2026-04-01"},
                      {"Retry-After", "7"}});
    EXPECT_NE(r.url.find("/operations/op1"), std::string::npos) << "polled " << r.url;
    if (polls++ < 2) return ArmJson(200, AzureTestData("operation_in_progress.json"), {{"Retry-After", "11"}});
    return ArmJson(200, AzureTestData("operation_succeeded.json"));
  };
  auto done = rig.client.Mutate("PATCH", kPath, kComputeApiVersion, json{{"sku", {{"capacity", 3}}}});
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_TRUE(done->finished);
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(rig.SleptAtLeast(std::chrono::milliseconds(11000)));
  EXPECT_EQ(rig.sleeps.front(), std::chrono::milliseconds(7000));
}

TEST(AzureClient, ALocationOperationEndsWhenItStopsAnswering202) {
  Rig rig;
  int polls = 0;
  rig.transport.handler = [&](const TransportRequest& r) {
    if (r.method == "POST")
      return ArmJson(202, nullptr, {{"Location", "https://arm.test/operationresults/op9?api-version=2017-08-31"}});
    return polls++ < 1 ? ArmJson(202, nullptr) : ArmJson(204, nullptr);
  };
  auto done = rig.client.Mutate("POST", std::string(kPath) + "/delete", kComputeApiVersion,
                                json{{"instanceIds", {"3"}}});
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_TRUE(done->finished);
  EXPECT_EQ(rig.sleeps.front(), std::chrono::milliseconds(3000));  // no Retry-After: the poll interval
}

TEST(AzureClient, AFailedOperationWithAllocationFailedIsACapacityError) {
  Rig rig;
  rig.transport.handler = [&](const TransportRequest& r) {
    if (r.method == "PUT")
      return ArmJson(201, AzureTestData("agent_pool.json"),
                     {{"Azure-AsyncOperation", "https://arm.test/operations/op2?api-version=2017-08-31"}});
    return ArmJson(200, AzureTestData("operation_failed_allocation.json"));
  };
  auto done = rig.client.Mutate("PUT", "subscriptions/s/agentPools/gpu", kContainerServiceApiVersion, json::object());
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().category(), ErrorCategory::kCapacity);
  EXPECT_NE(done.error().message().find("AllocationFailed"), std::string::npos) << done.error().message();
  EXPECT_NE(done.error().message().find("operation Failed"), std::string::npos) << done.error().message();
}

TEST(AzureClient, APreconditionFailureIsAnOutcomeNotAnError) {
  Rig rig;
  rig.transport.handler = [](const TransportRequest&) {
    return ArmJson(412, AzureTestData("error_precondition_failed.json"));
  };
  auto done = rig.client.Mutate("PATCH", kPath, kComputeApiVersion, json::object(), {{"If-Match", "\"5\""}});
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_TRUE(done->precondition_failed);
  EXPECT_EQ(HeaderValue(rig.transport.requests.at(0).headers, "If-Match"), "\"5\"");
}

TEST(AzureClient, TheTokenIsNeverSentToAStatusUrlOnAnotherHost) {
  Rig rig;
  rig.transport.handler = [](const TransportRequest&) {
    return ArmJson(202, nullptr, {{"Azure-AsyncOperation", "https://elsewhere.example/operations/op3"}});
  };
  auto done = rig.client.Mutate("POST", std::string(kPath) + "/delete", kComputeApiVersion, json::object());
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(rig.transport.requests.size(), 1u);
}

TEST(AzureClient, AnOperationStillRunningAtTheTimeoutIsReportedUnfinished) {
  Rig rig;
  rig.transport.handler = [](const TransportRequest& r) {
    if (r.method == "PATCH")
      return ArmJson(200, AzureTestData("scale_set.json"),
                     {{"Azure-AsyncOperation", "https://arm.test/operations/op4"}, {"Retry-After", "120"}});
    return ArmJson(200, AzureTestData("operation_in_progress.json"), {{"Retry-After", "120"}});
  };
  auto done = rig.client.Mutate("PATCH", kPath, kComputeApiVersion, json::object());
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_FALSE(done->finished);
  EXPECT_EQ(rig.transport.requests.size(), 1u + 600 / 120);
}

}  // namespace
}  // namespace gpuscaler::cloud::azure_client_test
