// Draining a node against the fake API server: cordon, evictions through
// the Eviction API, PodDisruptionBudget refusals (429) waited out and never
// forced, DaemonSet and mirror pods left alone, do-not-disrupt respected,
// Events with the decision's reason. Waiting advances a fake clock.
#include "gpuscaler/kube/drain.h"

#include <gtest/gtest.h>

#include "../fakes/fake_clock.h"
#include "../fakes/fake_cloud_provider.h"
#include "gpuscaler/kube/cluster_provider.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FakeApiServer;

class DrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> pods = testing::ReadReference("examples/podlist-pending-gpu.assembled.json");
    std::optional<std::string> nodes = testing::ReadReference("examples/nodelist-gpu.assembled.json");
    if (!pods || !nodes) GTEST_SKIP() << "../shared/reference/kubernetes absent";
    node_ = json::parse(*nodes)["items"][0];
    node_name_ = node_["metadata"]["name"];
    server_.Put("nodes", node_);
    pod_template_ = json::parse(*pods)["items"][0];
  }

  // A pod running on the node, owned by `owner_kind`.
  void AddPod(const std::string& name, const std::string& owner_kind = "ReplicaSet",
              const json& annotations = json::object()) {
    json p = pod_template_;
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = "uid-" + name;
    p["metadata"]["ownerReferences"][0]["kind"] = owner_kind;
    if (!annotations.empty()) p["metadata"]["annotations"] = annotations;
    p["spec"]["nodeName"] = node_name_;
    p["status"] = {{"phase", "Running"}};
    server_.Put("pods", p);
  }

  bool Cordoned() { return (*server_.Get("nodes", node_name_))["spec"].value("unschedulable", false); }

  std::vector<std::string> EventReasons() {
    std::vector<std::string> out;
    for (const json& e : server_.events()) out.push_back(e["reason"]);
    return out;
  }

  DrainOptions Options() {
    DrainOptions o;
    o.timeout = std::chrono::minutes(2);
    o.retry_interval = std::chrono::seconds(5);
    o.reason = "consolidation: node idle for 10m";
    return o;
  }

  FakeApiServer server_;
  ApiClient client_{testing::FakeClusterConfig(server_)};
  testing::FakeClock clock_;
  int waits_ = 0;
  Drainer drainer_{client_, clock_, [this](milliseconds d) {
                     ++waits_;
                     clock_.Advance(std::chrono::duration_cast<Seconds>(d));
                     return true;
                   }};
  json node_;
  json pod_template_;
  std::string node_name_;
};

TEST_F(DrainTest, CordonsEvictsAndLeavesDaemonSetAndMirrorPods) {
  AddPod("web-1");
  AddPod("web-2");
  AddPod("dcgm-exporter-x", "DaemonSet");
  AddPod("kube-proxy-static", "Node", {{"kubernetes.io/config.mirror", "abc"}});
  Result<DrainResult> r = drainer_.Drain(node_name_, Options());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->evicted, 2);
  EXPECT_EQ(r->skipped, 2);
  EXPECT_TRUE(Cordoned());
  EXPECT_FALSE(server_.Get("pods", "default/web-1").has_value());
  EXPECT_TRUE(server_.Get("pods", "default/dcgm-exporter-x").has_value());
  EXPECT_TRUE(server_.Get("pods", "default/kube-proxy-static").has_value());
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/web-1/eviction"), 1);
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/dcgm-exporter-x/eviction"), 0);
  EXPECT_EQ(server_.Count("DELETE", "/"), 0);  // nothing deleted directly, ever
  EXPECT_EQ(EventReasons(), (std::vector<std::string>{"Draining", "Drained"}));
  for (const json& e : server_.events()) {
    EXPECT_EQ(e["involvedObject"]["kind"], "Node");
    EXPECT_EQ(e["involvedObject"]["name"], node_name_);
    EXPECT_NE(e["message"].get<std::string>().find("consolidation: node idle for 10m"), std::string::npos);
  }
}

TEST_F(DrainTest, APodDisruptionBudgetRefusalIsWaitedOutAndRetriedNeverForced) {
  AddPod("guarded");
  AddPod("free");
  server_.SetBudget("default/guarded", 3);  // three 429s, then allowed
  Result<DrainResult> r = drainer_.Drain(node_name_, Options());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->budget_refusals, 3);
  EXPECT_EQ(r->evicted, 2);
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/guarded/eviction"), 4);
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/free/eviction"), 1);
  EXPECT_EQ(waits_, 3);  // one retry interval per refusal
  EXPECT_EQ(server_.Count("DELETE", "/"), 0);
}

TEST_F(DrainTest, ABudgetThatNeverAllowsTimesOutUncordonsAndKeepsThePod) {
  AddPod("guarded");
  server_.SetBudget("default/guarded", -1);
  Result<DrainResult> r = drainer_.Drain(node_name_, Options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(r.error().message().find("default/guarded"), std::string::npos) << r.error().message();
  EXPECT_TRUE(server_.Get("pods", "default/guarded").has_value());
  EXPECT_FALSE(Cordoned());  // back in service: it will not be terminated
  // 2 minutes at 5 s a try: the eviction was tried until the timeout.
  EXPECT_GE(server_.Count("POST", "/api/v1/namespaces/default/pods/guarded/eviction"), 20);
  EXPECT_EQ(EventReasons().back(), "DrainTimeout");
  EXPECT_EQ(server_.events().back()["type"], "Warning");
}

TEST_F(DrainTest, DoNotDisruptOnAPodOrTheNodeRefusesBeforeCordoning) {
  struct Case {
    std::string name;
    std::function<void()> mark;
  };
  const std::vector<Case> cases = {
      {"gpuscaler annotation on a pod",
       [&] { AddPod("precious", "ReplicaSet", {{"gpuscaler.io/do-not-disrupt", "true"}}); }},
      {"karpenter annotation on a pod",
       [&] { AddPod("precious", "ReplicaSet", {{"karpenter.sh/do-not-disrupt", "true"}}); }},
      {"annotation on the node", [&] {
         json n = *server_.Get("nodes", node_name_);
         n["metadata"]["annotations"]["gpuscaler.io/do-not-disrupt"] = "true";
         server_.Put("nodes", n);
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    server_.Put("nodes", node_);
    server_.Delete("pods", "default/precious");
    c.mark();
    Result<DrainResult> r = drainer_.Drain(node_name_, Options());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_FALSE(Cordoned());
    EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/precious/eviction"), 0);
    EXPECT_EQ(EventReasons().back(), "DrainRefused");
  }
}

TEST_F(DrainTest, AWaitThatGivesUpStopsTheDrainAtOnce) {
  AddPod("guarded");
  server_.SetBudget("default/guarded", -1);
  Drainer losing(client_, clock_, [](milliseconds) { return false; });  // leadership lost
  Result<DrainResult> r = losing.Drain(node_name_, Options());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("interrupted"), std::string::npos);
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/guarded/eviction"), 1);
}

TEST_F(DrainTest, AnUnknownNodeIsNotFound) {
  Result<DrainResult> r = drainer_.Drain("no-such-node", Options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kNotFound);
}

}  // namespace
}  // namespace gpuscaler::kube

// --- the provider wrapper: drain before terminate, leadership gate --------

namespace gpuscaler::kube {
namespace {

class ClusterProviderTest : public DrainTest {
 protected:
  void SetUp() override {
    DrainTest::SetUp();
    if (IsSkipped()) return;
    cache_.Start();
    ASSERT_TRUE(cache_.WaitSynced(std::chrono::seconds(20)));
  }
  void TearDown() override { cache_.Stop(); }

  ClusterCloudProvider Provider() {
    ClusterCloudProvider::Parts parts;
    parts.inner = &cloud_;
    parts.cache = &cache_;
    parts.drainer = &drainer_;
    parts.is_leader = [this] { return leader_; };
    parts.drain_options = [this](const std::string& id) {
      DrainOptions o = Options();
      o.reason = "remove idle node " + id;
      return o;
    };
    return ClusterCloudProvider(parts);
  }

  testing::FakeCloudProvider cloud_{clock_};
  // The cache's thread reads its clock: not the fake one the test advances.
  SystemClock cache_clock_;
  ClusterCache cache_{client_, cache_clock_};
  bool leader_ = true;
};

// The recorded node's providerID names i-0123456789abcdef0.
constexpr const char* kInstance = "i-0123456789abcdef0";

TEST_F(ClusterProviderTest, TerminateDrainsTheInstancesNodeFirst) {
  AddPod("web-1");
  ASSERT_TRUE(cache_.WaitUntil([](const ClusterView& v) { return v.pods.size() == 1; }, std::chrono::seconds(20)));
  ClusterCloudProvider provider = Provider();
  Status s = provider.Terminate({kInstance, "i-never-registered"});
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_EQ(cloud_.terminations.size(), 1u);
  EXPECT_EQ(cloud_.terminations[0], (std::vector<std::string>{kInstance, "i-never-registered"}));
  EXPECT_FALSE(server_.Get("pods", "default/web-1").has_value());
  EXPECT_TRUE(Cordoned());
  EXPECT_EQ(provider.drains(), 1);
  EXPECT_NE(server_.events().back()["message"].get<std::string>().find(std::string("remove idle node ") + kInstance),
            std::string::npos);
}

TEST_F(ClusterProviderTest, ADrainThatFailsKeepsTheInstance) {
  AddPod("guarded");
  server_.SetBudget("default/guarded", -1);
  ASSERT_TRUE(cache_.WaitUntil([](const ClusterView& v) { return v.pods.size() == 1; }, std::chrono::seconds(20)));
  ClusterCloudProvider provider = Provider();
  Status s = provider.Terminate({kInstance});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kTransient);
  EXPECT_TRUE(cloud_.terminations.empty());
  EXPECT_TRUE(server_.Get("pods", "default/guarded").has_value());
}

TEST_F(ClusterProviderTest, ANonLeaderNeitherLaunchesNorDrainsNorTerminates) {
  AddPod("web-1");
  leader_ = false;
  ClusterCloudProvider provider = Provider();
  LaunchRequest req;
  req.pool = "gpu";
  req.count = 1;
  req.offerings = {Offering{}};
  EXPECT_FALSE(provider.Launch(req).ok());
  EXPECT_FALSE(provider.Terminate({kInstance}).ok());
  EXPECT_TRUE(cloud_.launches.empty());
  EXPECT_TRUE(cloud_.terminations.empty());
  EXPECT_EQ(server_.Count("PATCH", "/api/v1/nodes/"), 0);
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/"), 0);
  leader_ = true;
  EXPECT_TRUE(provider.Launch(req).ok());
  EXPECT_EQ(cloud_.launches.size(), 1u);
}

}  // namespace
}  // namespace gpuscaler::kube
