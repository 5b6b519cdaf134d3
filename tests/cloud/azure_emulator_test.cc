// The Azure emulator over real HTTPS (azure_https_harness.h): Entra ID and
// IMDS tokens and the Bearer check, scale-set long-running operations,
// ETag / If-Match, throttling, and the scenario reader.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cloud/azure_https_harness.h"
#include "cloud/gcp_test_key.h"

namespace gpuscaler::azure_emulator_test {
namespace {

using azure_https_testing::AzureHttpsTest;
using cloud::testing::TestRsaKey;
using nlohmann::json;
using namespace std::chrono_literals;

int64_t AzTestUnix(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// The path and query of an absolute URL the emulator handed out.
std::string AzTestPathOf(const std::string& url) {
  const size_t scheme = url.find("://");
  return scheme == std::string::npos ? url : url.substr(url.find('/', scheme + 3));
}

class AzureEmulatorTest : public AzureHttpsTest {
 protected:
  std::string TokenForm(const std::string& client, const std::string& rest) {
    return "grant_type=client_credentials&client_id=" + client +
           "&scope=https%3A%2F%2Fmanagement.azure.com%2F.default&" + rest;
  }
  Answer Token(const std::string& form) {
    return Call("POST", std::string("/") + kTenant + "/oauth2/v2.0/token", form, "",
                {{"Content-Type", "application/x-www-form-urlencoded"}});
  }
  std::string Assertion(const TestRsaKey& key, const std::string& iss, const std::string& sub, const json& aud,
                        Seconds valid = 600s) {
    const int64_t now = AzTestUnix(clock_.WallNow());
    json claims = {{"iss", iss}, {"sub", sub}, {"aud", aud}, {"nbf", now - 5}, {"exp", now + valid.count()},
                   {"jti", "j1"}};
    return key.SignJwt(R"({"alg":"RS256","typ":"JWT","x5t":"abc"})", claims.dump());
  }
};

TEST_F(AzureEmulatorTest, ClientSecretTokenOpensArmAndExpires) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "token_lifetime: 10m\nclients:\n  - {client_id: app-1, client_secret: s3cret}\n"
      "scale_sets:\n  - {resource_group: rg, name: plain, capacity: 1}\n"));
  Answer bad = Token(TokenForm("app-1", "client_secret=wrong"));
  EXPECT_EQ(bad.status, 401);
  EXPECT_EQ(bad.body.value("error", ""), "invalid_client");
  EXPECT_EQ(bad.body["error_codes"][0], 7000215);
  Answer unknown = Token(TokenForm("app-2", "client_secret=s3cret"));
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.body.value("error", ""), "unauthorized_client");

  Answer ok = Token(TokenForm("app-1", "client_secret=s3cret"));
  ASSERT_EQ(ok.status, 200) << ok.raw.body;
  EXPECT_EQ(ok.body.value("token_type", ""), "Bearer");
  EXPECT_EQ(ok.body.value("expires_in", 0), 600);
  const std::string token = ok.body.value("access_token", "");
  ASSERT_FALSE(token.empty());

  EXPECT_EQ(Call("GET", Vmss("rg", "plain"), "", token).status, 200);
  Answer none = Call("GET", Vmss("rg", "plain"), "", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.Code(), "AuthenticationFailed");
  EXPECT_NE(none.raw.Header("WWW-Authenticate").find("Bearer"), std::string::npos);
  Answer forged = Call("GET", Vmss("rg", "plain"), "", "not-issued");
  EXPECT_EQ(forged.status, 401);
  EXPECT_EQ(forged.Code(), "InvalidAuthenticationToken");
  clock_.Advance(10min);
  Answer expired = Call("GET", Vmss("rg", "plain"), "", token);
  EXPECT_EQ(expired.status, 401);
  EXPECT_EQ(expired.Code(), "ExpiredAuthenticationToken");
}

TEST_F(AzureEmulatorTest, CertificateAndFederatedAssertionsAreChecked) {
  TestRsaKey cert_key, federated_key, stranger;
  json cert_pem = cert_key.PublicPem();
  json fed_pem = federated_key.PublicPem();
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "clients:\n  - {client_id: app-cert, certificate: " + cert_pem.dump() + "}\n"
      "  - {client_id: app-wi, federated_issuer: 'https://oidc.example/issuer', federated_subject: "
      "'system:serviceaccount:kube-system:gpuscaler', federated_key: " + fed_pem.dump() + "}\n"));
  const std::string type = "client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer";
  const std::string aud = std::string("https://login.microsoftonline.com/") + kTenant + "/oauth2/v2.0/token";
  Answer signed_ok = Token(TokenForm("app-cert", type + "&client_assertion=" +
                                                     Assertion(cert_key, "app-cert", "app-cert", aud)));
  EXPECT_EQ(signed_ok.status, 200) << signed_ok.raw.body;
  EXPECT_FALSE(signed_ok.body.value("access_token", "").empty());
  Answer wrong_key = Token(TokenForm("app-cert", type + "&client_assertion=" +
                                                     Assertion(stranger, "app-cert", "app-cert", aud)));
  EXPECT_EQ(wrong_key.status, 401);
  EXPECT_EQ(wrong_key.body["error_codes"][0], 7000274);
  Answer wrong_aud = Token(TokenForm(
      "app-cert", type + "&client_assertion=" + Assertion(cert_key, "app-cert", "app-cert", "https://elsewhere/")));
  EXPECT_EQ(wrong_aud.status, 401);
  Answer stale = Token(TokenForm(
      "app-cert", type + "&client_assertion=" + Assertion(cert_key, "app-cert", "app-cert", aud, -3600s)));
  EXPECT_EQ(stale.status, 401);
  EXPECT_EQ(stale.body["error_codes"][0], 700024);

  const std::string subject = "system:serviceaccount:kube-system:gpuscaler";
  Answer federated = Token(TokenForm(
      "app-wi", type + "&client_assertion=" +
                    Assertion(federated_key, "https://oidc.example/issuer", subject, json::array({"api://AzureADTokenExchange"}))));
  EXPECT_EQ(federated.status, 200) << federated.raw.body;
  Answer other_subject = Token(TokenForm(
      "app-wi", type + "&client_assertion=" +
                    Assertion(federated_key, "https://oidc.example/issuer", "system:serviceaccount:x:y",
                              "api://AzureADTokenExchange")));
  EXPECT_EQ(other_subject.status, 401);
  EXPECT_EQ(other_subject.body["error_codes"][0], 700213);
}

TEST_F(AzureEmulatorTest, ImdsManagedIdentityTokenNeedsTheMetadataHeader) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "managed_identity_client_id: mi-1\nscale_sets:\n  - {resource_group: rg, name: plain, capacity: 0}\n"));
  const std::string path = "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fmanagement.azure.com%2F";
  Answer no_header = Call("GET", path, "", "");
  EXPECT_EQ(no_header.status, 400);
  Answer ok = Call("GET", path, "", "", {{"Metadata", "true"}});
  ASSERT_EQ(ok.status, 200) << ok.raw.body;
  EXPECT_EQ(ok.body.value("client_id", ""), "mi-1");
  EXPECT_EQ(ok.body.value("resource", ""), "https://management.azure.com/");
  EXPECT_EQ(ok.body.value("expires_in", ""), "3600");
  EXPECT_EQ(ok.body.value("expires_on", ""), std::to_string(AzTestUnix(clock_.WallNow() + 3600s)));
  EXPECT_EQ(Call("GET", Vmss("rg", "plain"), "", ok.body.value("access_token", "")).status, 200);
  Answer other = Call("GET", path + "&client_id=mi-2", "", "", {{"Metadata", "true"}});
  EXPECT_EQ(other.status, 400);
}

TEST_F(AzureEmulatorTest, ScaleSetOperationsRunInProgressThenSucceed) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator("operation_latency: 20s\nretry_after: 3s\n"));
  json create = {{"location", "eastus"},
                 {"sku", {{"name", "Standard_NC24ads_A100_v4"}, {"capacity", 2}}},
                 {"zones", {"1", "2"}},
                 {"tags", {{"gpuscaler-pool", "a100"}}},
                 {"properties",
                  {{"virtualMachineProfile",
                    {{"priority", "Spot"}, {"evictionPolicy", "Delete"}, {"billingProfile", {{"maxPrice", -1}}}}}}}};
  Answer put = Call("PUT", Vmss("rg", "gpu"), create.dump());
  ASSERT_EQ(put.status, 201) << put.raw.body;
  EXPECT_EQ(put.body["properties"].value("provisioningState", ""), "Creating");
  EXPECT_EQ(put.body["sku"].value("capacity", 0), 2);
  EXPECT_EQ(put.body["properties"]["virtualMachineProfile"].value("evictionPolicy", ""), "Delete");
  EXPECT_EQ(put.raw.Header("Retry-After"), "3");
  const std::string async = put.raw.Header("Azure-AsyncOperation");
  ASSERT_EQ(async.rfind(Base() + "/subscriptions/" + kSub + "/providers/Microsoft.Compute/locations/eastus/operations/", 0),
            0u)
      << async;
  Answer running = Get(AzTestPathOf(async));
  EXPECT_EQ(running.body.value("status", ""), "InProgress");
  Answer vms = Get(VmssSub("rg", "gpu", "virtualMachines", "&$expand=instanceView"));
  ASSERT_EQ(vms.body["value"].size(), 2u);
  EXPECT_EQ(vms.body["value"][0]["properties"].value("provisioningState", ""), "Creating");
  EXPECT_EQ(vms.body["value"][0]["zones"][0], "1");
  EXPECT_EQ(vms.body["value"][1]["zones"][0], "2");

  clock_.Advance(20s);
  EXPECT_EQ(Get(AzTestPathOf(async)).body.value("status", ""), "Succeeded");
  EXPECT_EQ(Get(Vmss("rg", "gpu")).body["properties"].value("provisioningState", ""), "Succeeded");
  Answer view = Get(VmssSub("rg", "gpu", "virtualMachines/1/instanceView"));
  EXPECT_EQ(view.body["statuses"][1].value("code", ""), "PowerState/running");

  Answer patch = Call("PATCH", Vmss("rg", "gpu"), json{{"sku", {{"capacity", 3}}}}.dump());
  ASSERT_EQ(patch.status, 200) << patch.raw.body;
  EXPECT_EQ(patch.body["properties"].value("provisioningState", ""), "Updating");
  clock_.Advance(20s);
  EXPECT_EQ(Get(VmssSub("rg", "gpu", "virtualMachines")).body["value"].size(), 3u);

  Answer del = Call("POST", VmssSub("rg", "gpu", "delete"), json{{"instanceIds", {"0"}}}.dump());
  ASSERT_EQ(del.status, 202) << del.raw.body;
  const std::string location = del.raw.Header("Location");
  ASSERT_FALSE(location.empty());
  EXPECT_EQ(Get(AzTestPathOf(location)).status, 202);
  clock_.Advance(20s);
  EXPECT_EQ(Get(AzTestPathOf(location)).status, 200);
  Answer after = Get(VmssSub("rg", "gpu", "virtualMachines"));
  ASSERT_EQ(after.body["value"].size(), 2u);
  EXPECT_EQ(after.body["value"][0].value("instanceId", ""), "1");
  EXPECT_EQ(Get(Vmss("rg", "gpu")).body["sku"].value("capacity", 0), 2);
  EXPECT_EQ(Get(VmssSub("rg", "gpu", "virtualMachines/0")).status, 404);
  Answer unknown = Call("POST", VmssSub("rg", "gpu", "delete"), json{{"instanceIds", {"0"}}}.dump());
  EXPECT_EQ(unknown.status, 400);

  Answer forced = Call("POST", VmssSub("rg", "gpu", "delete", "&forceDeletion=true"), json{{"instanceIds", {"1"}}}.dump());
  ASSERT_EQ(forced.status, 202);
  EXPECT_EQ(Get(VmssSub("rg", "gpu", "virtualMachines")).body["value"].size(), 1u);
}

TEST_F(AzureEmulatorTest, IfMatchWithAStaleEtagIsPreconditionFailed) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator("scale_sets:\n  - {resource_group: rg, name: plain, capacity: 1}\n"));
  Answer got = Get(Vmss("rg", "plain"));
  const std::string etag = got.raw.Header("ETag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(got.body.value("etag", ""), etag);
  Answer stale = Call("PATCH", Vmss("rg", "plain"), json{{"sku", {{"capacity", 2}}}}.dump(), kToken,
                      {{"If-Match", "\"999\""}});
  EXPECT_EQ(stale.status, 412);
  EXPECT_EQ(stale.Code(), "PreconditionFailed");
  EXPECT_EQ(Get(Vmss("rg", "plain")).body["sku"].value("capacity", 0), 1);
  Answer fresh = Call("PATCH", Vmss("rg", "plain"), json{{"sku", {{"capacity", 2}}}}.dump(), kToken,
                      {{"If-Match", etag}});
  ASSERT_EQ(fresh.status, 200) << fresh.raw.body;
  EXPECT_NE(fresh.raw.Header("ETag"), etag);
  EXPECT_EQ(Call("PATCH", Vmss("rg", "plain"), json{{"sku", {{"capacity", 3}}}}.dump(), kToken,
                 {{"If-Match", etag}}).status,
            412);
  EXPECT_EQ(Call("PUT", Vmss("rg", "plain"), json{{"sku", {{"capacity", 3}}}}.dump(), kToken,
                 {{"If-None-Match", "*"}}).status,
            412);
  EXPECT_EQ(emu_->stats().precondition_failures, 3);
}

TEST_F(AzureEmulatorTest, ThrottlingAnswers429WithRetryAfter) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "throttle: {every: 3, retry_after: 7s}\nscale_sets:\n  - {resource_group: rg, name: plain}\n"));
  EXPECT_EQ(Get(Vmss("rg", "plain")).status, 200);
  EXPECT_EQ(Get(Vmss("rg", "plain")).status, 200);
  Answer third = Get(Vmss("rg", "plain"));
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(third.Code(), "TooManyRequests");
  EXPECT_EQ(third.raw.Header("Retry-After"), "7");
  EXPECT_EQ(Get(Vmss("rg", "plain")).status, 200);
  EXPECT_EQ(emu_->stats().throttled, 1);
}

TEST_F(AzureEmulatorTest, ArmCallsNeedAnApiVersionAndHttpsIsAllThereIs) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator("scale_sets:\n  - {resource_group: rg, name: plain}\n"));
  Answer missing = Get(std::string("/subscriptions/") + kSub +
                       "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/plain");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.Code(), "MissingApiVersionParameter");
  EXPECT_EQ(Get(Vmss("rg", "nothere")).Code(), "ResourceNotFound");
  // The port speaks TLS only: a plain-HTTP request gets no HTTP answer.
  net::HttpRequest plain;
  plain.url = "http://127.0.0.1:" + std::to_string(http_->port()) + Vmss("rg", "plain");
  net::HttpClientOptions o;
  o.timeout = 3s;
  auto r = net::Fetch(plain, o);
  EXPECT_TRUE(!r.ok() || r->status == 400) << r->status;
}

TEST_F(AzureEmulatorTest, ListsOneVmDeleteAndScaleSetDelete) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "operation_latency: 5s\nscale_sets:\n  - {resource_group: rg, name: a, capacity: 2}\n"
      "  - {resource_group: other, name: b, capacity: 1}\n"
      "clusters:\n  - {resource_group: rg-aks, name: prod, pools: [{name: sys, count: 1}]}\n"));
  const std::string sub = std::string("/subscriptions/") + kSub;
  Answer in_rg = Get(sub + "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets?api-version=2026-04-01");
  ASSERT_EQ(in_rg.body["value"].size(), 1u) << in_rg.raw.body;
  EXPECT_EQ(in_rg.body["value"][0].value("name", ""), "a");
  // Subscription-wide: both, and the pool's scale set in the node resource group.
  EXPECT_EQ(Get(sub + "/providers/Microsoft.Compute/virtualMachineScaleSets?api-version=2026-04-01").body["value"].size(),
            3u);
  Answer clusters = Get(sub + "/providers/Microsoft.ContainerService/managedClusters?api-version=2026-06-01");
  ASSERT_EQ(clusters.body["value"].size(), 1u);
  EXPECT_EQ(clusters.body["value"][0].value("name", ""), "prod");

  Answer one = Call("DELETE", VmssSub("rg", "a", "virtualMachines/1"));
  ASSERT_EQ(one.status, 202) << one.raw.body;
  EXPECT_EQ(Get(VmssSub("rg", "a", "virtualMachines/1")).body["properties"].value("provisioningState", ""), "Deleting");
  clock_.Advance(5s);
  EXPECT_EQ(Get(VmssSub("rg", "a", "virtualMachines/1")).status, 404);
  EXPECT_EQ(Get(Vmss("rg", "a")).body["sku"].value("capacity", 0), 1);

  Answer whole = Call("DELETE", Vmss("rg", "a"));
  ASSERT_EQ(whole.status, 202);
  EXPECT_EQ(Get(Vmss("rg", "a")).body["properties"].value("provisioningState", ""), "Deleting");
  clock_.Advance(5s);
  EXPECT_EQ(Get(Vmss("rg", "a")).Code(), "ResourceNotFound");
  EXPECT_EQ(Get(AzTestPathOf(whole.raw.Header("Azure-AsyncOperation"))).body.value("status", ""), "Succeeded");
  EXPECT_EQ(Call("DELETE", Vmss("rg", "a")).status, 204);
}

TEST(AzureScenarioTest, ErrorsNameTheKeyAndLine) {
  auto bad = sim::ParseAzureScenario("clusters:\n  - resource_group: rg\n    name: c\n    pools:\n"
                                     "      - {name: gpu, count: 1, priority: Cheap}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("clusters[0].pools[0] (line 5): priority must be Regular or Spot"),
            std::string::npos)
      << bad.error().message();
  auto code = sim::ParseAzureScenario("capacity:\n  - {vm_size: X, limit: 1, error: NoRoom}\n");
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.error().message().find("capacity[0] (line 2): error must be"), std::string::npos);
  auto ok = sim::ParseAzureScenario(
      "provider: azure\nlocation: westeurope\noperation_latency: 5s\nevictions:\n"
      "  - {at: 2m, cluster: c, pool: spot, notice: 45s}\n");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok->location, "westeurope");
  EXPECT_EQ(ok->operation_latency, Seconds(5));
  ASSERT_EQ(ok->evictions.size(), 1u);
  EXPECT_EQ(ok->evictions[0].notice, Seconds(45));
}

}  // namespace
}  // namespace gpuscaler::azure_emulator_test
