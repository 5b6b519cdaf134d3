// The controller with the real planner and the real AwsProvider against the
// cloud emulator, in process (EmulatorTransport, no sockets): scale up and
// down, converge past capacity errors and throttling, restart after a crash
// at each step of a launch without duplicating or losing a node, and record
// a gang given back by its Auto Scaling group in the launch's outcome.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "fakes/fake_work_source.h"
#include "fakes/g5_fleet.h"
#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler {
namespace {

using cloud::AwsClient;
using cloud::AwsProvider;
using sim::CloudEmulator;
using sim::EmulatorScenario;
using testing::FakeWorkSource;

Catalog TwoZoneCatalog() { return testing::G5XlargeCatalog({"us-east-1a", "us-east-1b"}, 1.006, 0.40); }

Policy FastPolicy() {
  Policy p = testing::UndampedGpuPolicy();
  p.disruption.min_node_age = Seconds(0);
  return p;
}

std::vector<DemandUnit> Units(int n) {
  std::vector<DemandUnit> out;
  for (int i = 0; i < n; ++i) {
    DemandUnit u;
    u.id = "job-" + std::to_string(i);
    u.workload_class = "batch";
    u.gpus = 1;
    u.cpu_milli = 2000;
    u.memory_mib = 8192;
    out.push_back(u);
  }
  return out;
}

// Thrown by CrashingProvider to stand for the process dying at that point.
struct Crash {};

enum class CrashPoint { kNever, kBeforeCall, kAfterCall };

// Forwards to the AwsProvider; dies once at the chosen point of the first launch.
class CrashingProvider final : public CloudProvider {
 public:
  CrashingProvider(CloudProvider& inner, CrashPoint at) : inner_(inner), at_(at) {}
  Result<LaunchResult> Launch(const LaunchRequest& r) override {
    if (at_ == CrashPoint::kBeforeCall) {
      at_ = CrashPoint::kNever;
      throw Crash{};
    }
    auto result = inner_.Launch(r);
    if (at_ == CrashPoint::kAfterCall) {
      at_ = CrashPoint::kNever;
      throw Crash{};
    }
    return result;
  }
  Status Terminate(const std::vector<std::string>& ids) override { return inner_.Terminate(ids); }
  Result<std::vector<Instance>> ListInstances() override { return inner_.ListInstances(); }
  Result<std::vector<InterruptionNotice>> PollInterruptions() override { return inner_.PollInterruptions(); }
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override { return inner_.SpotPrices(since); }

 private:
  CloudProvider& inner_;
  CrashPoint at_;
};

class EndToEnd : public ::testing::Test {
 protected:
  EndToEnd() : clock_(FromUnixSeconds(1782000000)) {}

  void Boot(EmulatorScenario s) {
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    transport_ = std::make_unique<sim::EmulatorTransport>(*emulator_);
    cloud::Credentials c;
    c.access_key_id = "AKIDEXAMPLE";
    c.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    creds_ = std::make_unique<cloud::StaticCredentialsProvider>(c, "test");
    cloud::AwsClientOptions o;
    o.endpoint_url = "http://127.0.0.1:4566";
    client_ = std::make_unique<AwsClient>(o, *transport_, *creds_, clock_, [this](std::chrono::milliseconds d) {
      slept_ += d;
    });
    cloud::AwsProviderOptions po;
    po.launch_template.name = "gpu-nodes";
    po.interruption_queue_url = "http://127.0.0.1:4566/123456789012/gpuscaler-interruptions";
    provider_ = std::make_unique<AwsProvider>(po, *client_, clock_);
  }

  void StartController(CloudProvider& cloud, AuditStore* store, Policy policy = FastPolicy()) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    controller_ = std::make_unique<Controller>(clock_, cloud, store, work_, catalog_, std::move(policy), o);
  }

  // Live (pending or running) instances in the emulator.
  std::vector<sim::EmulatedInstance> Live() const {
    std::vector<sim::EmulatedInstance> out;
    for (const auto& i : emulator_->Instances()) {
      if (i.state == "pending" || i.state == "running") out.push_back(i);
    }
    return out;
  }

  std::set<std::string> Tracked() const {
    std::set<std::string> ids;
    for (const Node& n : controller_->snapshot().nodes) ids.insert(n.instance_id);
    return ids;
  }

  TickReport Tick(Seconds then = Seconds(30)) {
    TickReport r = controller_->Tick();
    clock_.Advance(then);
    return r;
  }

  ManualClock clock_;
  Catalog catalog_ = TwoZoneCatalog();
  FakeWorkSource work_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<sim::EmulatorTransport> transport_;
  std::unique_ptr<cloud::StaticCredentialsProvider> creds_;
  std::unique_ptr<AwsClient> client_;
  std::unique_ptr<AwsProvider> provider_;
  std::unique_ptr<Controller> controller_;
  std::chrono::milliseconds slept_{0};
};

TEST_F(EndToEnd, ScalesAPoolUpAndDown) {
  Boot({});
  auto store = std::move(SqliteAuditStore::Open(":memory:")).value();
  StartController(*provider_, store.get());
  work_.SetPending(Units(3));
  TickReport up = Tick();
  EXPECT_TRUE(up.errors.empty()) << up.errors[0].ToString();
  ASSERT_EQ(up.nodes_launched, 3);
  ASSERT_EQ(Live().size(), 3u);
  for (const auto& i : Live()) EXPECT_EQ(i.tags.at(kOwnerTag), "gpu");
  EXPECT_EQ(Tracked().size(), 3u);

  // The work lands on the nodes, then finishes: the pool scales back to zero.
  std::vector<DemandUnit> units = Units(3);
  std::vector<sim::EmulatedInstance> live = Live();
  for (size_t i = 0; i < live.size(); ++i) work_.SetRunning(live[i].instance_id, {units[i]});
  work_.SetPending({});
  for (int t = 0; t < 3; ++t) Tick();
  EXPECT_EQ(Live().size(), 3u);
  for (const auto& i : live) work_.SetRunning(i.instance_id, {});
  // Empty nodes are not held back by the disruption budget (2 per 10
  // minutes, for removals that move work): all three go within the ten
  // minutes that budget would have kept the third one for.
  for (int t = 0; t < 10 && !Live().empty(); ++t) Tick();
  EXPECT_TRUE(Live().empty());
  Tick(Seconds(60));
  Tick();
  EXPECT_TRUE(Tracked().empty());
}

TEST_F(EndToEnd, ConvergesOnAnotherZoneOrOnDemandWhenAZoneHasNoCapacity) {
  EmulatorScenario s;
  s.capacity = {{"g5.xlarge", "us-east-1a", std::nullopt, 0, "InsufficientInstanceCapacity", {}, {}},
                {"g5.xlarge", "us-east-1b", CapacityType::kSpot, 1, "InsufficientInstanceCapacity", {}, {}}};
  Boot(s);
  auto store = std::move(SqliteAuditStore::Open(":memory:")).value();
  StartController(*provider_, store.get());
  work_.SetPending(Units(4));
  int capacity_errors = 0;
  for (int t = 0; t < 6 && Live().size() < 4; ++t) capacity_errors += Tick().capacity_errors;
  const auto live = Live();
  ASSERT_EQ(live.size(), 4u);
  EXPECT_GT(capacity_errors, 0);
  int spot_b = 0;
  for (const auto& i : live) {
    EXPECT_EQ(i.zone, "us-east-1b");
    spot_b += i.lifecycle == CapacityType::kSpot;
  }
  EXPECT_LE(spot_b, 1);
  EXPECT_EQ(Tracked().size(), 4u);
}

TEST_F(EndToEnd, BacksOffUnderThrottlingAndStillConverges) {
  EmulatorScenario s;
  s.throttle_every = 2;
  Boot(s);
  auto store = std::move(SqliteAuditStore::Open(":memory:")).value();
  StartController(*provider_, store.get());
  work_.SetPending(Units(3));
  for (int t = 0; t < 6 && Live().size() < 3; ++t) Tick();
  EXPECT_EQ(Live().size(), 3u);
  EXPECT_GT(emulator_->stats().throttled, 0);
  EXPECT_GT(client_->retries(), 0);
  EXPECT_GT(slept_.count(), 0);
  for (int t = 0; t < 3; ++t) Tick();
  EXPECT_EQ(Live().size(), 3u);  // nothing launched twice
  EXPECT_EQ(Tracked().size(), 3u);
}

// A crash before the call, after the call but before the outcome is recorded,
// and after the outcome; then a restart on the same audit database. The
// emulator must end with exactly the planned nodes, all of them tracked.
TEST_F(EndToEnd, RestartAfterACrashAtEachStepNeitherDuplicatesNorLosesNodes) {
  const std::vector<std::pair<const char*, CrashPoint>> points = {
      {"before the call", CrashPoint::kBeforeCall},
      {"after the call, before the outcome", CrashPoint::kAfterCall},
      {"after the outcome", CrashPoint::kNever}};
  for (const auto& [name, point] : points) {
    SCOPED_TRACE(name);
    Boot({});
    work_ = FakeWorkSource();
    const std::filesystem::path db =
        std::filesystem::temp_directory_path() / ("gpuscaler-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(static_cast<int>(point)) + ".db");
    std::filesystem::remove(db);
    {
      auto store = std::move(SqliteAuditStore::Open(db.string())).value();
      CrashingProvider crashing(*provider_, point);
      StartController(crashing, store.get());
      work_.SetPending(Units(3));
      bool crashed = false;
      try {
        Tick();
      } catch (const Crash&) {
        crashed = true;
      }
      EXPECT_EQ(crashed, point != CrashPoint::kNever);
      controller_.reset();  // the process is gone; its store closes without the tick's commit
    }
    EXPECT_EQ(Live().size(), point == CrashPoint::kBeforeCall ? 0u : 3u);

    auto store = std::move(SqliteAuditStore::Open(db.string())).value();
    StartController(*provider_, store.get());
    for (int t = 0; t < 4; ++t) Tick();
    const auto live = Live();
    EXPECT_EQ(live.size(), 3u);
    std::set<std::string> ids;
    for (const auto& i : live) ids.insert(i.instance_id);
    EXPECT_EQ(Tracked(), ids);  // none untracked, none phantom
    EXPECT_TRUE(std::move(store->OpenIntents()).value().empty());
    controller_.reset();
    std::filesystem::remove(db);
  }
}

// A gang of three on pool "gpu", bought through Auto Scaling group gpu-asg,
// which finds capacity for two: the provider gives both back, and the
// decision's launch action is failed with the provider's words.
TEST_F(EndToEnd, AGangItsAutoScalingGroupGaveBackIsTheLaunchsOutcome) {
  EmulatorScenario s;
  s.capacity = {{"g5.xlarge", "us-east-1a", std::nullopt, 2, "InsufficientInstanceCapacity", {}, {}},
                {"g5.xlarge", "us-east-1b", std::nullopt, 0, "InsufficientInstanceCapacity", {}, {}}};
  sim::ScriptedGroup group;
  group.name = "gpu-asg";
  group.zones = {"us-east-1a", "us-east-1b"};
  group.tags[kClusterTag] = "e2e";
  s.groups = {group};
  Boot(s);
  cloud::AwsProviderOptions po;
  po.cluster_name = "e2e";
  AwsProvider provider(po, *client_, clock_);
  Policy policy = FastPolicy();
  policy.pools[0].actuation = Actuation::kAsg;
  policy.pools[0].auto_scaling_group = "gpu-asg";
  auto store = std::move(SqliteAuditStore::Open(":memory:")).value();
  StartController(provider, store.get(), policy);
  std::vector<DemandUnit> gang = Units(3);
  for (DemandUnit& u : gang) u.gang = GangMembership{"train-1", 3};
  work_.SetPending(gang);

  TickReport r = Tick();
  EXPECT_EQ(r.nodes_launched, 0);
  EXPECT_TRUE(Live().empty());
  auto reader = std::move(store->OpenReader()).value();
  Result<std::vector<ActionRow>> actions = reader->ActionsForDecision(r.decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 1u);
  const ActionRow& launch = (*actions)[0];
  EXPECT_EQ(launch.action.kind, ActionKind::kLaunch);
  EXPECT_EQ(launch.action.count, 3);
  EXPECT_EQ(launch.outcome, ActionOutcome::kFailed);
  EXPECT_TRUE(launch.result_instance_ids.empty());
  EXPECT_NE(launch.detail.find("capacity: auto scaling group 'gpu-asg': a gang needs all 3 nodes; 2 came up within "
                               "60 s, and every one of them is given back: "),
            std::string::npos)
      << launch.detail;
  EXPECT_NE(launch.detail.find("InsufficientInstanceCapacity"), std::string::npos) << launch.detail;
}

}  // namespace
}  // namespace gpuscaler
