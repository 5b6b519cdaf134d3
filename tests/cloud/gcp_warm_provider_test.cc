// GcpProvider's warm pools against the Compute Engine emulator in process:
// Stop through the group's stopInstances (suspendInstances for
// kHibernated), ListInstances reporting the stopped members as kStopped and
// deleted ones as shutting down, Start bringing the same instance back
// (startInstances or resumeInstances by its status) in the warm start's
// latency, a start without capacity (kCapacity, the instance back in the
// pool), and another cluster's stopped instances left alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/gcp_provider.h"
#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::sim::gcp_warm_provider_test {
namespace {

using nlohmann::json;

constexpr const char* kZone = "us-central1-a";

// Groups in us-central1-a: "l4-a" (g2-standard-8) and "cpu-a"
// (n2-standard-8, capacity for one live VM) of cluster "test", and
// "other-l4" of cluster "other" with one member. A create takes 120 s to
// RUNNING, a start or resume 30 s.
constexpr const char* kScenario =
    "access_tokens: [test-token]\noperation_latency: 0s\nboot_latency: 120s\ndelete_latency: 5s\n"
    "stop_latency: 10s\nstart_latency: 30s\nmig_retry_interval: 10s\n"
    "managed_instance_groups:\n"
    "  - {name: l4-a, zone: us-central1-a, machine_type: g2-standard-8,\n"
    "     labels: {gpuscaler-cluster: test, gpuscaler-pool: l4}}\n"
    "  - {name: cpu-a, zone: us-central1-a, machine_type: n2-standard-8,\n"
    "     labels: {gpuscaler-cluster: test, gpuscaler-pool: cpu}}\n"
    "  - {name: other-l4, zone: us-central1-a, machine_type: g2-standard-8, target_size: 1,\n"
    "     labels: {gpuscaler-cluster: other, gpuscaler-pool: l4}}\n"
    "capacity:\n  - {machine_type: n2-standard-8, zone: us-central1-a, limit: 1}\n";

WallTime Begin() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-04T10:00:00Z", &t));
  return t;
}

class GcpWarmProvider : public ::testing::Test {
 protected:
  GcpWarmProvider() : clock_(Begin()) {
    auto s = ParseGcpScenario(kScenario);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    emu_ = std::make_unique<GcpEmulator>(std::move(*s), clock_);
    transport_.handler = [this](const cloud::TransportRequest& r) -> Result<cloud::TransportResponse> {
      EmulatorRequest e{r.method, r.url.substr(std::string("http://emulator.test").size()), r.headers,
                        r.body};
      const size_t verb = e.target.rfind('/');
      calls_.push_back(r.method + " " + e.target.substr(verb + 1, e.target.find('?') - verb - 1));
      EmulatorResponse a = emu_->Handle(e);
      return cloud::TransportResponse{a.status, {{"Content-Type", a.content_type}}, a.body};
    };
    cloud::GcpClientOptions c;
    c.endpoint = "http://emulator.test/compute/v1/";
    client_ = std::make_unique<cloud::GcpClient>(
        c, transport_, token_, clock_, [this](std::chrono::milliseconds d) {
          clock_.Advance(std::max(Seconds(1), std::chrono::duration_cast<Seconds>(d)));
        });
    cloud::GcpProviderOptions o;
    o.cluster_name = "test";
    o.project = "gpuscaler-test";
    o.region = "us-central1";
    o.zones = {kZone};
    o.pools["l4"].migs = {{kZone, "l4-a"}};
    o.pools["cpu"].migs = {{kZone, "cpu-a"}};
    o.instance_template = "global/instanceTemplates/gpu-node";
    o.operation_timeout = Seconds(30);
    o.poll_interval = std::chrono::milliseconds(1000);
    provider_ = std::make_unique<cloud::GcpProvider>(o, *client_);
  }

  // Launches one node of `pool` and waits until it runs; its id.
  std::string LaunchRunning(const std::string& pool, const std::string& type, const std::string& token) {
    LaunchRequest r;
    r.pool = pool;
    r.count = 1;
    r.idempotency_token = token;
    Offering o;
    o.instance_type = type;
    o.zone = kZone;
    o.region = "us-central1";
    r.offerings = {o};
    Result<LaunchResult> launched = provider_->Launch(r);
    EXPECT_TRUE(launched.ok() && launched->instances.size() == 1)
        << (launched.ok() ? json(launched->errors.size()).dump() : launched.error().ToString());
    if (!launched.ok() || launched->instances.empty()) return "";
    clock_.Advance(Seconds(120));
    EXPECT_EQ(StateOf(launched->instances[0].instance_id), InstanceState::kRunning);
    return launched->instances[0].instance_id;
  }
  // The instance's state in ListInstances; nullopt when not listed.
  std::optional<InstanceState> StateOf(const std::string& id) {
    Result<std::vector<Instance>> listed = provider_->ListInstances();
    EXPECT_TRUE(listed.ok()) << listed.error().ToString();
    if (!listed.ok()) return std::nullopt;
    for (const Instance& i : *listed) {
      if (i.instance_id == id) return i.state;
    }
    return std::nullopt;
  }
  int CallsOf(const std::string& verb) const {
    return static_cast<int>(std::count(calls_.begin(), calls_.end(), "POST " + verb));
  }
  json Emulator(const std::string& method, const std::string& path, const json& body = nullptr) {
    EmulatorRequest r{method,
                      std::string("/compute/v1/projects/gpuscaler-test/zones/") + kZone + "/" + path,
                      {{"Authorization", "Bearer test-token"}},
                      body.is_null() ? "" : body.dump()};
    return json::parse(emu_->Handle(r).body, nullptr, false);
  }
  std::string Action(const std::string& group, const std::string& name) {
    const json list = Emulator("POST", "instanceGroupManagers/" + group + "/listManagedInstances");
    for (const json& m : list.value("managedInstances", json::array())) {
      if (m["name"] == name)
        return m["currentAction"].get<std::string>() + "/" + m.value("instanceStatus", "");
    }
    return "(absent)";
  }

  ManualClock clock_;
  std::unique_ptr<GcpEmulator> emu_;
  cloud::testing::FakeTransport transport_;
  std::vector<std::string> calls_;
  struct Token final : cloud::TokenSource {
    Result<cloud::AccessToken> Get(WallTime now) override {
      return cloud::AccessToken{"test-token", now + Seconds(3600)};
    }
    std::string Name() const override { return "test"; }
  } token_;
  std::unique_ptr<cloud::GcpClient> client_;
  std::unique_ptr<cloud::GcpProvider> provider_;
};

TEST_F(GcpWarmProvider, AStoppedNodeIsListedAsStoppedAndStartBringsTheSameInstanceBackInTheWarmLatency) {
  const std::string id = LaunchRunning("l4", "g2-standard-8", "launch-1");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(provider_->Stop({id}, WarmState::kStopped).ok());
  EXPECT_EQ(CallsOf("stopInstances"), 1);
  EXPECT_EQ(Action("l4-a", id), "STOPPING/STOPPING");
  EXPECT_EQ(StateOf(id), InstanceState::kStopped) << "stopping counts as stopped";
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Action("l4-a", id), "NONE/TERMINATED");
  EXPECT_EQ(StateOf(id), InstanceState::kStopped);
  // Stopping it again is not an error and calls nothing.
  ASSERT_TRUE(provider_->Stop({id}, WarmState::kStopped).ok());
  EXPECT_EQ(CallsOf("stopInstances"), 1);

  ASSERT_TRUE(provider_->Start({id}).ok());
  EXPECT_EQ(CallsOf("startInstances"), 1);
  EXPECT_EQ(CallsOf("resumeInstances"), 0);
  EXPECT_EQ(StateOf(id), InstanceState::kPending);
  clock_.Advance(Seconds(30));
  EXPECT_EQ(StateOf(id), InstanceState::kRunning) << "30 s after the start, where a launch takes 120 s";
  // Starting a running instance is not an error and calls nothing.
  ASSERT_TRUE(provider_->Start({id}).ok());
  EXPECT_EQ(CallsOf("startInstances"), 1);

  // A second stop and start of the same instance are new requests, not
  // replays of the first ones (requestId).
  ASSERT_TRUE(provider_->Stop({id}, WarmState::kStopped).ok());
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Action("l4-a", id), "NONE/TERMINATED");
  ASSERT_TRUE(provider_->Start({id}).ok());
  clock_.Advance(Seconds(30));
  EXPECT_EQ(StateOf(id), InstanceState::kRunning);
}

TEST_F(GcpWarmProvider, HibernatedSuspendsAndStartResumes) {
  const std::string id = LaunchRunning("cpu", "n2-standard-8", "launch-c");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(provider_->Stop({id}, WarmState::kHibernated).ok());
  EXPECT_EQ(CallsOf("suspendInstances"), 1);
  EXPECT_EQ(CallsOf("stopInstances"), 0);
  EXPECT_EQ(StateOf(id), InstanceState::kStopped);
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Action("cpu-a", id), "NONE/SUSPENDED");
  EXPECT_EQ(StateOf(id), InstanceState::kStopped);
  EXPECT_EQ(Emulator("GET", "instanceGroupManagers/cpu-a")["targetSuspendedSize"], 1);

  ASSERT_TRUE(provider_->Start({id}).ok());
  EXPECT_EQ(CallsOf("resumeInstances"), 1);
  EXPECT_EQ(CallsOf("startInstances"), 0);
  clock_.Advance(Seconds(30));
  EXPECT_EQ(StateOf(id), InstanceState::kRunning);
}

TEST_F(GcpWarmProvider, HibernatingAGpuNodeIsAConfigErrorAndAnUnknownIdToo) {
  const std::string id = LaunchRunning("l4", "g2-standard-8", "launch-1");
  ASSERT_FALSE(id.empty());
  Status s = provider_->Stop({id}, WarmState::kHibernated);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kConfig) << s.error().ToString();
  EXPECT_NE(s.error().message().find("GPUs"), std::string::npos) << s.error().ToString();
  EXPECT_EQ(StateOf(id), InstanceState::kRunning);

  Status unknown = provider_->Stop({id, "gs-test-nope-0"}, WarmState::kStopped);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().category(), ErrorCategory::kConfig) << unknown.error().ToString();
  EXPECT_EQ(CallsOf("stopInstances"), 0) << "nothing is stopped when an id is unknown";
}

TEST_F(GcpWarmProvider, AResumeWithoutCapacityIsCapacityAndTheNodeStaysWarm) {
  const std::string id = LaunchRunning("cpu", "n2-standard-8", "launch-c");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(provider_->Stop({id}, WarmState::kHibernated).ok());
  clock_.Advance(Seconds(10));
  // The suspended VM gave its place in the zone up; another node takes it.
  const std::string taker = LaunchRunning("cpu", "n2-standard-8", "launch-d");
  ASSERT_FALSE(taker.empty());

  Status s = provider_->Start({id});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kCapacity) << s.error().ToString();
  EXPECT_NE(s.error().message().find("ZONE_RESOURCE_POOL_EXHAUSTED"), std::string::npos)
      << s.error().ToString();
  // Given back: the group does not keep retrying, the node is warm again.
  EXPECT_EQ(Action("cpu-a", id), "NONE/SUSPENDED");
  EXPECT_EQ(StateOf(id), InstanceState::kStopped);
  EXPECT_EQ(Emulator("GET", "instanceGroupManagers/cpu-a")["targetSuspendedSize"], 1);

  // With the place free again it resumes.
  ASSERT_TRUE(provider_->Terminate({taker}).ok());
  clock_.Advance(Seconds(5));
  ASSERT_TRUE(provider_->Start({id}).ok());
  clock_.Advance(Seconds(30));
  EXPECT_EQ(StateOf(id), InstanceState::kRunning);
}

TEST_F(GcpWarmProvider, AnotherClustersStoppedNodesAreNotListedNorStopped) {
  clock_.Advance(Seconds(122));
  const json list = Emulator("POST", "instanceGroupManagers/other-l4/listManagedInstances");
  ASSERT_EQ(list["managedInstances"].size(), 1u) << list.dump();
  const std::string theirs = list["managedInstances"][0]["name"];
  const json stopped = Emulator("POST", "instanceGroupManagers/other-l4/stopInstances",
                                {{"instances", {std::string("zones/") + kZone + "/instances/" + theirs}}});
  ASSERT_EQ(stopped["status"], "DONE") << stopped.dump();
  clock_.Advance(Seconds(10));
  ASSERT_EQ(Action("other-l4", theirs), "NONE/TERMINATED");

  Result<std::vector<Instance>> listed = provider_->ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  for (const Instance& i : *listed) EXPECT_NE(i.instance_id, theirs);
  EXPECT_EQ(CallsOf("listManagedInstances"), 0) << "no group of another cluster is read";
  Status s = provider_->Start({theirs});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().category(), ErrorCategory::kConfig) << s.error().ToString();
  EXPECT_EQ(Action("other-l4", theirs), "NONE/TERMINATED");
}

TEST_F(GcpWarmProvider, ADeletedNodeReadsAsShuttingDownAndAStoppedOneIsDeletedByTerminate) {
  const std::string running = LaunchRunning("l4", "g2-standard-8", "launch-1");
  const std::string warm = LaunchRunning("l4", "g2-standard-8", "launch-2");
  ASSERT_FALSE(running.empty() || warm.empty());
  ASSERT_TRUE(provider_->Stop({warm}, WarmState::kStopped).ok());
  clock_.Advance(Seconds(10));

  ASSERT_TRUE(provider_->Terminate({running, warm}).ok());
  EXPECT_EQ(Action("l4-a", running), "DELETING/STOPPING");
  EXPECT_EQ(Action("l4-a", warm), "DELETING/STOPPING");
  EXPECT_EQ(StateOf(running), InstanceState::kShuttingDown);
  EXPECT_EQ(StateOf(warm), InstanceState::kShuttingDown);
  clock_.Advance(Seconds(5));
  EXPECT_EQ(StateOf(running), std::nullopt);
  EXPECT_EQ(StateOf(warm), std::nullopt);
  EXPECT_EQ(Emulator("GET", "instanceGroupManagers/l4-a")["targetStoppedSize"], 0);
}

}  // namespace
}  // namespace gpuscaler::sim::gcp_warm_provider_test
