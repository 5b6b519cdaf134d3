// The daemon's Kubernetes wiring: the `kubernetes:` configuration, cluster
// work in the WorkSource, and SetUpKubernetes against the fake API server
// through a kubeconfig (pods become demand, node health and drains off the
// tick through ClusterNodes, only the leader acts).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "../fakes/fake_clock.h"
#include "../fakes/fake_cloud_provider.h"
#include "../fakes/fake_work_source.h"
#include "gpuscaler/daemon/config.h"
#include "gpuscaler/daemon/signal_work_source.h"
#include "gpuscaler/kube/deadline_terms.h"
#include "gpuscaler/kube/provisioning.h"
#include "kube/kube_fixtures.h"
#include "src/daemon/kube_setup.h"
#include "support/temp_dir.h"

namespace gpuscaler::daemon {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

constexpr const char* kHead =
    "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: p.yaml\n";

TEST(KubernetesConfig, InClusterByDefaultOrAKubeconfigRelativeToTheFile) {
  Result<DaemonConfig> c =
      ParseDaemonConfig(std::string(kHead) + "kubernetes: {enabled: true}\n", "/etc/g/c.yaml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_TRUE(c->kubernetes.in_cluster);
  EXPECT_TRUE(c->kubernetes.leader_election.namespace_name.empty());

  c = ParseDaemonConfig(std::string(kHead) +
                            "kubernetes:\n  enabled: true\n  kubeconfig: kube/config\n  context: lab\n"
                            "  namespace: ops\n  leader_election: {enabled: true, lease_name: gs}\n",
                        "/etc/g/c.yaml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_FALSE(c->kubernetes.in_cluster);
  EXPECT_EQ(c->kubernetes.kubeconfig, "/etc/g/kube/config");
  EXPECT_EQ(c->kubernetes.context, "lab");
  EXPECT_EQ(c->kubernetes.namespace_name, "ops");
  EXPECT_EQ(c->kubernetes.leader_election.lease_name, "gs");
}

TEST(KubernetesConfig, ReportsContradictionsAndUnknownFields) {
  struct Case {
    std::string yaml;
    std::string want;
  } cases[] = {
      {"kubernetes: {in_cluster: true, kubeconfig: k}\n", "kubernetes.kubeconfig: give either in_cluster"},
      {"kubernetes: {in_cluster: false}\n", "in_cluster: false needs kubeconfig"},
      {"kubernetes: {context: lab}\n", "kubernetes.context: needs kubeconfig"},
      {"kubernetes: {leader_election: {lease_name: ''}}\n", "lease_name: must not be empty"},
      {"kubernetes: {kubeconfg: k}\n", "kubeconfg"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    Result<DaemonConfig> r = ParseDaemonConfig(std::string(kHead) + c.yaml, "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().message();
  }
}

TEST(SignalWorkSource, ClusterWorkAddsPendingPodsAndBoundPodsTakeTheirNodesRoomFirst) {
  Catalog catalog;
  InstanceType t;
  t.name = "g5.xlarge";
  t.gpu_model = "A10G";
  t.gpu_count = 1;
  t.vcpus = 4;
  t.memory_mib = 16384;
  catalog.instance_types.push_back(t);
  Policy policy;
  WorkloadClassPolicy cls;
  cls.name = "batch";
  SignalQuery query;
  query.source = SignalSource::kPrometheus;
  query.query = "q";
  cls.queue_depth = query;
  policy.classes = {cls};
  Node node;
  node.id = "node-1";
  node.instance_id = "i-1";
  node.offering.instance_type = "g5.xlarge";
  ClusterWork cluster;
  DemandUnit pod;
  pod.id = "pod-pending";
  pod.workload_class = "batch";
  pod.gpus = 1;
  cluster.pending = {pod};
  DemandUnit bound = pod;
  bound.id = "pod-bound";
  cluster.running["i-1"] = {bound};
  cluster.status.source = "kubernetes";
  cluster.status.classes = {"batch"};
  ClassSignal depth;
  depth.workload_class = "batch";
  depth.reading.source = "prometheus";
  depth.reading.state = signals::SignalState::kOk;
  depth.reading.value = 1;  // one queued job
  depth.reading.observed_at = FromUnixSeconds(1000);
  SignalWorkSource work(catalog);
  work.Update(policy, {depth}, {node}, FromUnixSeconds(1000), &cluster);
  // The bound pod holds the only GPU: the queued job cannot go there.
  ASSERT_EQ(work.RunningOn("i-1").size(), 1u);
  EXPECT_EQ(work.RunningOn("i-1")[0].id, "pod-bound");
  ASSERT_EQ(work.Pending().size(), 2u);
  EXPECT_EQ(work.Pending()[0].id, "pod-pending");
  EXPECT_EQ(work.Pending()[1].id, "batch/0");
  const std::vector<SignalStatus> statuses = work.Signals();
  EXPECT_TRUE(std::any_of(statuses.begin(), statuses.end(),
                          [](const SignalStatus& s) { return s.source == "kubernetes"; }));
}

// SetUpKubernetes with a kubeconfig naming the fake API server.
class KubeSetupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // spdlog's default logger is created on first use inside the
    // (uninstrumented) libspdlog: created first on the elector's thread,
    // TSan cannot see the static-init guard and reports the main thread's
    // later read as a race. The daemon's main() logs before any thread
    // starts; do the same here.
    (void)spdlog::default_logger_raw();
    std::optional<std::string> pods = testing::ReadReference("examples/podlist-pending-gpu.assembled.json");
    std::optional<std::string> nodes = testing::ReadReference("examples/nodelist-gpu.assembled.json");
    if (!pods || !nodes) GTEST_SKIP() << "../shared/reference/kubernetes absent";
    const json node_list = json::parse(*nodes);
    for (const json& n : node_list["items"]) server_.Put("nodes", n);
    server_.Put("pods", json::parse(*pods)["items"][0]);
    server_.RequireToken("s3cret");
    const std::string kubeconfig = dir_.Write("kubeconfig",
                                              "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                                              "clusters: [{name: fake, cluster: {server: '" +
                                                  server_.url() +
                                                  "'}}]\n"
                                                  "users: [{name: u, user: {tokenFile: token}}]\n"
                                                  "contexts: [{name: test, context: {cluster: fake, "
                                                  "user: u, namespace: gpuscaler}}]\n");
    dir_.Write("token", "s3cret\n");
    config_.kubernetes.enabled = true;
    config_.kubernetes.in_cluster = false;
    config_.kubernetes.kubeconfig = kubeconfig;
    WorkloadClassPolicy inference;
    inference.name = "inference";
    inference.match_labels = {{"app", "triton-inference-server"}};
    policy_.classes = {inference};
    parts_.cloud = &cloud_;
  }

  testing::TempDir dir_;
  FakeApiServer server_;
  DaemonConfig config_;
  Policy policy_;
  Catalog catalog_;
  testing::FakeClock clock_;
  testing::FakeCloudProvider cloud_{clock_};
  LiveEngineParts parts_;
  DaemonSetup setup_;
};

TEST_F(KubeSetupTest, PendingPodsBecomeDemandAndNodesDrainOnTheirOwnThread) {
  Status s = SetUpKubernetes(config_, catalog_, &parts_, &setup_);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_TRUE(parts_.read_cluster);
  EXPECT_FALSE(setup_.is_leader);  // no leader election configured: always acts
  ClusterWork work = parts_.read_cluster(policy_, FromUnixSeconds(1));
  ASSERT_EQ(work.pending.size(), 1u);
  EXPECT_EQ(work.pending[0].workload_class, "inference");
  EXPECT_EQ(work.pending[0].gpus, 1);
  EXPECT_TRUE(work.status.sampled_at.has_value());
  EXPECT_EQ(work.status.source, "kubernetes");

  ASSERT_NE(parts_.cloud, &cloud_);  // wrapped
  ASSERT_NE(parts_.cluster_nodes, nullptr);
  ClusterNodes& nodes = *parts_.cluster_nodes;
  ASSERT_TRUE(nodes.Synced());
  std::optional<NodeHealth> health = nodes.Health("i-0123456789abcdef0");
  ASSERT_TRUE(health.has_value());
  EXPECT_TRUE(health->ready);
  EXPECT_TRUE(health->gpus_allocatable);
  EXPECT_FALSE(nodes.Health("i-never-registered").has_value());
  EXPECT_EQ(nodes.BeginDrain({"i-never-registered", 0, "", "terminated", Seconds(60), {}}).error().category(),
            ErrorCategory::kNotFound);

  DrainRequest drain{"i-0123456789abcdef0", 7, "idle", "terminated", Seconds(60), {}};
  ASSERT_TRUE(nodes.BeginDrain(drain).ok());
  std::vector<DrainOutcome> ended;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ended.empty() && std::chrono::steady_clock::now() < deadline) {
    ended = nodes.TakeEndedDrains();
    std::this_thread::yield();
  }
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].end, DrainEnd::kDrained);
  EXPECT_EQ(ended[0].request.action_id, 7);
  EXPECT_TRUE((*server_.Get("nodes", "ip-10-0-12-34.us-west-2.compute.internal"))["spec"].value(
      "unschedulable", false));
  // The wrapper itself only gates on leadership: it terminates at once.
  ASSERT_TRUE(parts_.cloud->Terminate({"i-0123456789abcdef0"}).ok());
  ASSERT_EQ(cloud_.terminations.size(), 1u);
  for (const auto& c : server_.calls()) EXPECT_EQ(c.authorization, "Bearer s3cret") << c.target;
}

// A pod's deadline terms reach the planner's demand through the daemon's
// reading of the API server: its own deadline as a multiple of the runtime
// it states, and what is left of that after its last checkpoint.
TEST_F(KubeSetupTest, APodsDeadlineRuntimeAndProgressAnnotationsBecomeItsDemandsLine) {
  json pod = json::parse(*testing::ReadReference("examples/podlist-pending-gpu.assembled.json"))["items"][0];
  pod["metadata"]["annotations"] = {{kube::kAnnotationDeadline, "1.5x"},
                                    {kube::kAnnotationExpectedRuntime, "4h"},
                                    {kube::kAnnotationProgress, "0.25"}};
  server_.Put("pods", pod);
  Status s = SetUpKubernetes(config_, catalog_, &parts_, &setup_);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  const ClusterWork work = parts_.read_cluster(policy_, FromUnixSeconds(1));
  ASSERT_EQ(work.pending.size(), 1u);
  const DemandUnit& u = work.pending[0];
  WallTime created;
  ASSERT_TRUE(ParseRfc3339(pod["metadata"]["creationTimestamp"].get<std::string>(), &created));
  EXPECT_EQ(u.submitted, created);
  EXPECT_EQ(u.deadline, created + Seconds(6 * 3600)) << "1.5 x the 4 h it states";
  EXPECT_EQ(u.total_work, Seconds(4 * 3600));
  EXPECT_EQ(u.expected_runtime, Seconds(3 * 3600)) << "a quarter done at its last checkpoint";
}

// The engine's loop with a drain that a PodDisruptionBudget holds open: ten
// minutes of the controller's (virtual) time pass, tick by tick; no tick
// waits for the drain, the instance is kept while its pod is there, and the
// liveness check stays green.
TEST_F(KubeSetupTest, ADrainHeldOpenByABudgetNeverDelaysATickNorFailsHealthz) {
  json pod = json::parse(*testing::ReadReference("examples/podlist-pending-gpu.assembled.json"))["items"][0];
  pod["metadata"]["name"] = "guarded";
  pod["metadata"]["uid"] = "uid-guarded";
  pod["spec"]["nodeName"] = "ip-10-0-12-34.us-west-2.compute.internal";
  pod["status"] = {{"phase", "Running"}};
  server_.Put("pods", pod);
  server_.SetBudget(pod["metadata"]["namespace"].get<std::string>() + "/guarded", -1);

  InstanceType t;
  t.name = "p4d.24xlarge";
  t.family = "p4d";
  t.gpu_model = "NVIDIA-A100";
  t.gpu_count = 8;
  t.vcpus = 96;
  t.memory_mib = 1152 * 1024;
  catalog_.gpu_models = {{"NVIDIA-A100", "a100", 40960, {}}};
  catalog_.instance_types = {t};
  RegionPrices region;
  region.region = "us-west-2";
  region.zones = {"us-west-2a"};
  region.on_demand_usd_per_hour = {{"p4d.24xlarge", 32.0}};
  catalog_.regions = {region};
  Instance inst;
  inst.instance_id = "i-0123456789abcdef0";
  inst.pool = "gpu";
  inst.offering = catalog_.Offerings({}).at(0);
  inst.launch_time = clock_.WallNow() - Seconds(3600);
  inst.state = InstanceState::kRunning;
  cloud_.instances[inst.instance_id] = inst;

  Policy policy;
  NodePoolPolicy pool;
  pool.name = "gpu";
  policy.pools = {pool};
  policy.classes = policy_.classes;
  policy.scaling.tick_interval = Seconds(30);
  policy.scaling.scale_down_stabilization = Seconds(0);
  policy.scaling.scale_down_cooldown = Seconds(0);
  policy.disruption.min_node_age = Seconds(0);
  policy.disruption.drain_timeout = Seconds(600);

  ASSERT_TRUE(SetUpKubernetes(config_, catalog_, &parts_, &setup_).ok());
  testing::FakeWorkSource work;  // nothing runs, nothing waits: the node is idle
  parts_.clock = &clock_;
  parts_.catalog = &catalog_;
  parts_.work = &work;
  parts_.fixed_policy = policy;
  parts_.before_tick = [this] {
    clock_.Advance(Seconds(30));
    return true;
  };
  std::unique_ptr<Engine> engine = MakeLiveEngine(std::move(parts_));
  DaemonState state;
  DaemonMetrics metrics;
  server::Router router = BuildRouter(setup_, state, metrics);
  server::HttpRequest healthz;
  healthz.method = "GET";
  healthz.target = healthz.path = "/healthz";

  int drains_started = 0;
  for (int i = 0; i < 21; ++i) {  // 10.5 minutes of the controller's time
    const auto begun = std::chrono::steady_clock::now();
    EngineTick tick = engine->Tick();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    state.Beat(std::chrono::steady_clock::now());
    drains_started += tick.report.drains_started;
    EXPECT_LT(seconds, 2.0) << "tick " << i << " waited";
    EXPECT_EQ(router.Handle(healthz).status, 200) << "tick " << i;
  }
  EXPECT_EQ(drains_started, 1);
  EXPECT_TRUE(cloud_.terminations.empty()) << "the pod is still there";
  EXPECT_TRUE(server_.Get("pods", pod["metadata"]["namespace"].get<std::string>() + "/guarded").has_value());
  // The drainer's own thread tried (and was refused): wait for its first try.
  const std::string eviction =
      "/api/v1/namespaces/" + pod["metadata"]["namespace"].get<std::string>() + "/pods/guarded/eviction";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server_.Count("POST", eviction) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_GE(server_.Count("POST", eviction), 1);
  EXPECT_TRUE((*server_.Get("nodes", "ip-10-0-12-34.us-west-2.compute.internal"))["spec"].value(
      "unschedulable", false));
  EXPECT_TRUE(cloud_.terminations.empty());
}

TEST_F(KubeSetupTest, WithLeaderElectionOnlyTheLeaseHolderActs) {
  config_.kubernetes.leader_election.enabled = true;
  Status s = SetUpKubernetes(config_, catalog_, &parts_, &setup_);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_TRUE(setup_.is_leader);
  // The elector's first try runs at start.
  std::optional<json> lease =
      server_.WaitForObject("leases", "gpuscaler/gpuscaler", std::chrono::seconds(20));
  ASSERT_TRUE(lease.has_value());
  EXPECT_NE(lease->at("spec").value("holderIdentity", "").find("_"), std::string::npos);  // host/pod + suffix
  // The Lease is on the server a moment before the elector has read the
  // answer to its write: spin (yielding) until it has, bounded.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!setup_.is_leader() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(setup_.is_leader());
  ClusterWork work = parts_.read_cluster(policy_, FromUnixSeconds(1));
  EXPECT_EQ(work.pending.size(), 1u);
  setup_.keep_alive.clear();  // stops the elector, releasing the Lease
  EXPECT_EQ((*server_.Get("leases", "gpuscaler/gpuscaler"))["spec"]["holderIdentity"], "");
}

}  // namespace
}  // namespace gpuscaler::daemon

namespace gpuscaler::daemon {
namespace {

// A best-effort-atomic ProvisioningRequest through the daemon's Kubernetes
// wiring: its members join the demand as one gang, and after the tick whose
// plan puts every member on a node the leader writes Provisioned=True to
// the request's status subresource, once.
TEST_F(KubeSetupTest, AProvisioningRequestsMembersAreDemandAndItsConditionsReachTheApiServer) {
  server_.ServeCustomResource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest");
  json request = testing::KubeTestData("provisioningrequest.json");
  request["spec"]["parameters"] = json::object();
  server_.Put("provisioningrequests", request);
  server_.Put("podtemplates", testing::KubeTestData("podtemplate.json"));
  WorkloadClassPolicy training;
  training.name = "training";
  training.match_namespaces = {"ml-training"};
  policy_.classes.push_back(training);
  Status s = SetUpKubernetes(config_, catalog_, &parts_, &setup_);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_TRUE(parts_.observe_tick);

  WallTime now{};  // a minute after the request was created
  ASSERT_TRUE(ParseRfc3339("2026-12-06T09:01:00Z", &now));
  ClusterWork work = parts_.read_cluster(policy_, now);
  std::vector<DemandUnit> members;
  for (const DemandUnit& u : work.pending) {
    if (u.id.rfind(kube::kRequestMemberPrefix, 0) == 0) members.push_back(u);
  }
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[0].workload_class, "training");
  ASSERT_TRUE(members[0].gang);
  EXPECT_EQ(members[0].gang->size, 4);

  const std::string status_path =
      "/apis/autoscaling.x-k8s.io/v1/namespaces/ml-training/provisioningrequests/"
      "llama-train-5f2c1-provision-1/status";
  TickReport report;
  report.time = now;
  report.planned = true;
  LaunchAction launch;
  launch.count = 4;
  launch.all_or_nothing = true;
  for (const DemandUnit& m : members) launch.unit_ids.push_back(m.id);
  report.plan.launches = {launch};
  parts_.observe_tick(report);
  const auto conditions = [&] {
    return (*server_.Get("provisioningrequests", "ml-training/llama-train-5f2c1-provision-1"))["status"]
        .value("conditions", json::array());
  };
  ASSERT_EQ(server_.Count("PATCH", status_path), 1) << "Accepted";
  ASSERT_EQ(conditions().size(), 1u);
  EXPECT_EQ(conditions()[0]["type"], "Accepted");

  // The next tick places the members on the launched (still launching)
  // nodes; the daemon writes once its cache shows the status it wrote.
  report.plan = Plan{};
  for (int i = 0; i < 4; ++i)
    report.plan.placements.push_back({members[i].id, "launching-" + std::to_string(i), -1, -1});
  report.time = now + Seconds(10);
  for (int attempt = 0; attempt < 200 && server_.Count("PATCH", status_path) < 2; ++attempt) {
    (void)parts_.read_cluster(policy_, report.time);
    parts_.observe_tick(report);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server_.Count("PATCH", status_path), 2);
  ASSERT_EQ(conditions().size(), 2u);
  EXPECT_EQ(conditions()[1]["type"], "Provisioned");
  EXPECT_EQ(conditions()[1]["status"], "True");
  EXPECT_EQ(conditions()[1]["reason"], "CapacityIsProvisioned");
  // The same tick again, before and after the cache catches up: no new write.
  parts_.observe_tick(report);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  (void)parts_.read_cluster(policy_, report.time);
  parts_.observe_tick(report);
  EXPECT_EQ(server_.Count("PATCH", status_path), 2);
  // Booked: the members are still demand, holding their nodes.
  work = parts_.read_cluster(policy_, report.time + Seconds(60));
  EXPECT_EQ(std::count_if(work.pending.begin(), work.pending.end(),
                          [](const DemandUnit& u) { return u.id.rfind(kube::kRequestMemberPrefix, 0) == 0; }),
            4);
}

}  // namespace
}  // namespace gpuscaler::daemon
