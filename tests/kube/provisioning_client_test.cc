// ProvisioningRequests written and read by Kubernetes' own Python client
// (Debian's python3-kubernetes, tests/kube/provisioning_client.py) on the
// fake API server, with gpuscaler's cache and status writes in between: the
// client creates a PodTemplate and a request as Kueue would; gpuscaler lists
// it, reconciles it and patches its status; the client reads the conditions
// back (parsing their times) and deletes the request, which gpuscaler's watch
// then drops. Skipped when the module is missing, except under CI=true.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../fakes/fake_clock.h"
#include "cli/process.h"
#include "gpuscaler/kube/cluster_cache.h"
#include "gpuscaler/kube/provisioning.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::testing {
namespace {

using nlohmann::json;
constexpr const char* kPython = "/usr/bin/python3";  // Debian's, which python3-kubernetes installs for
constexpr std::chrono::seconds kWait{20};

class ProvisioningClient : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    if (std::system((std::string(kPython) + " -c 'import kubernetes' 2>/dev/null").c_str()) != 0) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true")
        FAIL() << "python3-kubernetes is not installed (CI=true)";
      GTEST_SKIP() << "python3-kubernetes is not installed";
    }
    server_.ServeCustomResource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest");
    server_.RequireToken("t0ken");
    kubeconfig_ = Write("kubeconfig",
                        "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                        "clusters: [{name: fake, cluster: {server: '" +
                            server_.url() +
                            "'}}]\nusers: [{name: u, user: {token: t0ken}}]\n"
                            "contexts: [{name: test, context: {cluster: fake, user: u}}]\n")
                      .string();
  }

  json Client(const std::vector<std::string>& args) {
    std::string cmd = std::string(kPython) + " " +
                      ShellQuote(std::string(GPUSCALER_SOURCE_DIR) + "/tests/kube/provisioning_client.py") +
                      " " + ShellQuote(kubeconfig_);
    for (const std::string& a : args) cmd += " " + ShellQuote(a);
    cmd += " >" + ShellQuote((dir_ / "client.out").string()) + " 2>" +
           ShellQuote((dir_ / "client.err").string());
    const int status = std::system(cmd.c_str());
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << ReadAll(dir_ / "client.err");
    return json::parse(ReadAll(dir_ / "client.out"), nullptr, false);
  }

  FakeApiServer server_;
  std::string kubeconfig_;
};

TEST_F(ProvisioningClient, RequestsRoundTripBetweenKubernetesPythonClientAndGpuscaler) {
  const std::string testdata = std::string(GPUSCALER_SOURCE_DIR) + "/tests/kube/testdata/";
  const json created =
      Client({"create", testdata + "podtemplate.json", testdata + "provisioningrequest.json"});
  ASSERT_EQ(created.value("request", ""), "llama-train-5f2c1-provision-1") << created.dump();
  EXPECT_EQ(created["pod_sets"][0]["count"], 4);

  kube::ClusterConfig cluster = FakeClusterConfig(server_);
  cluster.token = "t0ken";
  kube::ApiClient api(cluster);
  FakeClock clock;
  kube::ClusterCache cache(api, clock);
  cache.Start();
  ASSERT_TRUE(cache.WaitUntil(
      [](const kube::ClusterView& v) {
        return v.synced && v.provisioning_requests.size() == 1 && !v.pod_templates.empty();
      },
      kWait));
  const kube::ClusterView view = cache.View();
  const kube::ProvisioningInputs in =
      kube::ReadProvisioningInputs(view.provisioning_requests, view.pod_templates, view.pods);
  ASSERT_EQ(in.requests.size(), 1u);
  EXPECT_EQ(in.requests[0].pod_sets[0].count, 4);
  EXPECT_EQ(in.requests[0].generation, 1);
  // The members sit on nodes: Accepted and Provisioned, written as the daemon writes them.
  kube::ProvisioningReconciler reconciler;
  const Policy policy = TrainingPolicy();
  std::vector<std::string> skipped;
  std::map<std::string, kube::MemberPlacement> placements;
  for (const DemandUnit& u : reconciler.Demand(in, policy, Catalog{}, in.requests[0].created, &skipped))
    placements[u.id] = {kube::MemberPlacement::Where::kOnNode, ""};
  ASSERT_EQ(placements.size(), 4u);
  const std::vector<kube::RequestStatusUpdate> updates =
      reconciler.Reconcile(in, placements, {}, {}, in.requests[0].created + Seconds(5));
  ASSERT_EQ(updates.size(), 1u);
  Result<kube::ApiResponse> patched =
      api.Call("PATCH", kube::StatusPath(updates[0]), kube::ConditionsPatch(updates[0]).dump(),
               "application/merge-patch+json");
  ASSERT_TRUE(patched.ok() && patched->ok()) << (patched ? patched->body : patched.error().ToString());

  const json read = Client({"read", "ml-training", "llama-train-5f2c1-provision-1"});
  ASSERT_EQ(read["conditions"].size(), 2u) << read.dump();
  EXPECT_EQ(read["conditions"][0]["type"], "Accepted");
  EXPECT_EQ(read["conditions"][1]["type"], "Provisioned");
  EXPECT_EQ(read["conditions"][1]["status"], "True");
  EXPECT_EQ(read["conditions"][1]["reason"], "CapacityIsFound");
  EXPECT_EQ(read["conditions"][1]["observedGeneration"], 1);
  std::string written = FormatRfc3339(in.requests[0].created + Seconds(5));
  written.pop_back();  // the client's isoformat has no "Z"
  EXPECT_EQ(read["conditions"][1]["parsed"], written) << "metav1.Time the client reads";
  EXPECT_EQ(read["listed"], json::array({"llama-train-5f2c1-provision-1"}));
  EXPECT_EQ(read["spec"]["provisioningClassName"], "best-effort-atomic-scale-up.autoscaling.x-k8s.io")
      << "a status write leaves the spec alone";

  Client({"delete", "ml-training", "llama-train-5f2c1-provision-1"});
  EXPECT_TRUE(
      cache.WaitUntil([](const kube::ClusterView& v) { return v.provisioning_requests.empty(); }, kWait));
  cache.Stop();
}

}  // namespace
}  // namespace gpuscaler::testing
