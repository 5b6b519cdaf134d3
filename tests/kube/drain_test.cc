// Draining a node against the fake API server: cordon, evictions through
// the Eviction API, PodDisruptionBudget refusals (429) waited out and never
// forced, DaemonSet and mirror pods left alone, do-not-disrupt respected,
// Events with the decision's reason. Waiting advances a fake clock. Then the
// same steps off the tick (AsyncDrainer) and the leadership gate.
#include "gpuscaler/kube/drain.h"

#include <gtest/gtest.h>

#include "../fakes/fake_clock.h"
#include "../fakes/fake_cloud_provider.h"
#include <thread>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/kube/async_drain.h"
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

TEST_F(DrainTest, AWarmNodeIsCordonedAndWhenWokenReturnsWithoutItsWarmTaint) {
  json node = node_;
  node["spec"]["taints"] = json::array({{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}},
                                        {{"key", kWarmTag}, {"value", "refill"}, {"effect", "NoSchedule"}}});
  server_.Put("nodes", node);
  ASSERT_TRUE(drainer_.SetWarm(node_name_, true).ok());
  EXPECT_TRUE(Cordoned());
  ASSERT_TRUE(drainer_.SetWarm(node_name_, false).ok());
  EXPECT_FALSE(Cordoned());
  const json taints = (*server_.Get("nodes", node_name_))["spec"]["taints"];
  ASSERT_EQ(taints.size(), 1u) << taints.dump();
  EXPECT_EQ(taints[0]["key"], "nvidia.com/gpu") << "the pool's own taints stay";
  // A node that is gone is an error that names it.
  const Status gone = drainer_.SetWarm("no-such-node", false);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().category(), ErrorCategory::kNotFound);
}

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

// --- drains off the tick: AsyncDrainer ------------------------------------

namespace gpuscaler::kube {
namespace {

class AsyncDrainTest : public DrainTest {
 protected:
  // Steps the drainer as its worker would, advancing the fake clock to each
  // next step; returns the outcome, or nullopt when none came within `limit`.
  std::optional<AsyncDrainer::Outcome> RunUntilEnded(Seconds limit) {
    const WallTime stop = clock_.WallNow() + limit;
    while (clock_.WallNow() <= stop) {
      std::optional<WallTime> next = async_.Step();
      std::vector<AsyncDrainer::Outcome> ended = async_.TakeEnded();
      if (!ended.empty()) return ended.front();
      if (!next) return std::nullopt;
      clock_.Advance(std::max(Seconds(1), *next - clock_.WallNow()));
    }
    return std::nullopt;
  }

  bool leader_ = true;
  AsyncDrainer async_{client_, clock_, [this] { return leader_; }};
};

TEST_F(AsyncDrainTest, BeginReturnsAtOnceAndAPdbThatBlocksThenAllowsEndsDrained) {
  AddPod("guarded");
  AddPod("free");
  server_.SetBudget("default/guarded", 3);
  async_.Begin("i-1", node_name_, Options());
  EXPECT_EQ(server_.Count("PATCH", "/api/v1/nodes/"), 0) << "Begin makes no call";
  EXPECT_TRUE(async_.IsOpen("i-1"));
  std::optional<AsyncDrainer::Outcome> out = RunUntilEnded(Seconds(120));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->end, AsyncDrainer::End::kDrained);
  EXPECT_EQ(out->key, "i-1");
  EXPECT_EQ(out->result.budget_refusals, 3);
  EXPECT_EQ(out->result.evicted, 2);
  EXPECT_EQ(server_.Count("POST", "/api/v1/namespaces/default/pods/guarded/eviction"), 4);
  EXPECT_EQ(server_.Count("DELETE", "/"), 0);
  EXPECT_TRUE(Cordoned());
  EXPECT_EQ(EventReasons(), (std::vector<std::string>{"Draining", "Drained"}));
  EXPECT_FALSE(async_.IsOpen("i-1"));
}

TEST_F(AsyncDrainTest, ATimeoutUncordonsAndDropsTheDeadline) {
  AddPod("guarded");
  server_.SetBudget("default/guarded", -1);
  async_.Begin("i-1", node_name_, Options());
  ASSERT_FALSE(async_.Step() == std::nullopt);
  json node = *server_.Get("nodes", node_name_);
  EXPECT_TRUE(node["spec"].value("unschedulable", false));
  EXPECT_EQ(node["metadata"]["annotations"].value(kDrainDeadlineAnnotation, ""),
            FormatRfc3339(clock_.WallNow() + Seconds(120)));
  std::optional<AsyncDrainer::Outcome> out = RunUntilEnded(Seconds(300));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->end, AsyncDrainer::End::kTimedOut);
  EXPECT_EQ(out->ended - out->started, Seconds(120));
  EXPECT_EQ(out->result.remaining, std::vector<std::string>{"default/guarded"});
  EXPECT_FALSE(Cordoned());
  EXPECT_FALSE(server_.Get("nodes", node_name_)->at("metadata").value("annotations", json::object()).contains(
      kDrainDeadlineAnnotation));
  EXPECT_TRUE(server_.Get("pods", "default/guarded").has_value());
  EXPECT_EQ(EventReasons().back(), "DrainTimeout");
}

TEST_F(AsyncDrainTest, ADrainerAfterARestartResumesWithTheDeadlineOnTheNode) {
  AddPod("guarded");
  server_.SetBudget("default/guarded", -1);
  async_.Begin("i-1", node_name_, Options());
  (void)async_.Step();
  clock_.Advance(Seconds(100));
  // The process restarts: a new drainer, a fresh 2-minute timeout asked for.
  AsyncDrainer restarted(client_, clock_);
  restarted.Begin("i-1", node_name_, Options());
  std::optional<WallTime> next = restarted.Step();
  ASSERT_TRUE(next.has_value());
  EXPECT_LE(*next, clock_.WallNow() + Seconds(20)) << "the first deadline holds";
  clock_.Advance(Seconds(21));
  restarted.Step();
  std::vector<AsyncDrainer::Outcome> ended = restarted.TakeEnded();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].end, AsyncDrainer::End::kTimedOut);
  const std::vector<std::string> reasons = EventReasons();
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "Draining"), 1);
}

TEST_F(AsyncDrainTest, DoNotDisruptIsRefusedAndAGoneNodeCountsAsDrained) {
  AddPod("precious", "ReplicaSet", {{"gpuscaler.io/do-not-disrupt", "true"}});
  async_.Begin("i-1", node_name_, Options());
  async_.Begin("i-2", "no-such-node", Options());
  async_.Step();
  std::vector<AsyncDrainer::Outcome> ended = async_.TakeEnded();
  ASSERT_EQ(ended.size(), 2u);
  for (const AsyncDrainer::Outcome& o : ended) {
    SCOPED_TRACE(o.key);
    EXPECT_EQ(o.end, o.key == "i-1" ? AsyncDrainer::End::kRefused : AsyncDrainer::End::kDrained);
  }
  EXPECT_FALSE(Cordoned());
}

TEST_F(AsyncDrainTest, DrainsPauseWhileNotLeading) {
  AddPod("web-1");
  leader_ = false;
  async_.Begin("i-1", node_name_, Options());
  async_.Step();
  EXPECT_EQ(server_.Count("PATCH", "/api/v1/nodes/"), 0);
  EXPECT_TRUE(async_.IsOpen("i-1"));
  leader_ = true;
  clock_.Advance(Seconds(5));
  async_.Step();
  ASSERT_EQ(async_.TakeEnded().size(), 1u);
}

TEST_F(AsyncDrainTest, TheWorkerThreadDrainsWithoutTheCaller) {
  AddPod("web-1");
  SystemClock wall;
  AsyncDrainer threaded(client_, wall);
  threaded.Start();
  threaded.Begin("i-1", node_name_, Options());
  std::vector<AsyncDrainer::Outcome> ended;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ended.empty() && std::chrono::steady_clock::now() < deadline) {
    ended = threaded.TakeEnded();
    std::this_thread::yield();
  }
  threaded.Stop();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].end, AsyncDrainer::End::kDrained);
  EXPECT_FALSE(server_.Get("pods", "default/web-1").has_value());
}

// --- the provider wrapper: leadership gate ---------------------------------

TEST(ClusterCloudProvider, ANonLeaderNeitherLaunchesNorTerminates) {
  testing::FakeClock clock;
  testing::FakeCloudProvider cloud{clock};
  bool leader = false;
  ClusterCloudProvider provider({&cloud, [&leader] { return leader; }, {}});
  LaunchRequest req;
  req.pool = "gpu";
  req.count = 1;
  req.offerings = {Offering{}};
  EXPECT_FALSE(provider.Launch(req).ok());
  EXPECT_FALSE(provider.Terminate({"i-1"}).ok());
  EXPECT_TRUE(cloud.launches.empty());
  EXPECT_TRUE(cloud.terminations.empty());
  leader = true;
  EXPECT_TRUE(provider.Launch(req).ok());
  EXPECT_TRUE(provider.Terminate({"i-1"}).ok());
  EXPECT_EQ(cloud.launches.size(), 1u);
  EXPECT_EQ(cloud.terminations.size(), 1u);
}

}  // namespace
}  // namespace gpuscaler::kube
