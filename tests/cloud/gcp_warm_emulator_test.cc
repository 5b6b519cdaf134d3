// The Compute Engine emulator's standby actions of managed instance groups,
// without sockets: stopInstances, suspendInstances, startInstances and
// resumeInstances, the members' currentAction and instanceStatus through
// each, the group's targetSize / targetStoppedSize / targetSuspendedSize,
// the standby policy's initial delay, what Compute Engine refuses, a resume
// without capacity, and the scenario keys.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_emulator.h"

namespace gpuscaler::sim::gcp_warm_emulator_test {
namespace {

using nlohmann::json;

constexpr const char* kBase = "/compute/v1/projects/gpuscaler-test/";
constexpr const char* kZone = "us-central1-a";

// Two groups in us-central1-a: "l4" (g2-standard-8, one L4 each) and "cpu"
// (n2-standard-8, no GPU; capacity for one live VM). A create takes 2 + 120 s
// to RUNNING, a start 30 s.
constexpr const char* kScenario =
    "access_tokens: [test-token]\noperation_latency: 2s\nboot_latency: 120s\ndelete_latency: 5s\n"
    "stop_latency: 10s\nstart_latency: 30s\nmig_retry_interval: 10s\n"
    "managed_instance_groups:\n"
    "  - {name: l4, zone: us-central1-a, machine_type: g2-standard-8}\n"
    "  - {name: cpu, zone: us-central1-a, machine_type: n2-standard-8, standby_initial_delay: 5m}\n"
    "capacity:\n  - {machine_type: n2-standard-8, zone: us-central1-a, limit: 1}\n"
    "quotas:\n  - {region: us-central1, metric: NVIDIA_L4_GPUS, limit: 8}\n";

WallTime Begin() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-04T10:00:00Z", &t));
  return t;
}

class GcpWarmEmulator : public ::testing::Test {
 protected:
  GcpWarmEmulator() : clock_(Begin()) {
    auto s = ParseGcpScenario(kScenario);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    emu_ = std::make_unique<GcpEmulator>(std::move(*s), clock_);
  }

  std::pair<int, json> Call(const std::string& method, const std::string& path, const json& body = nullptr) {
    EmulatorRequest r;
    r.method = method;
    r.target = kBase + path;
    r.headers = {{"Authorization", "Bearer test-token"}};
    if (!body.is_null()) r.body = body.dump();
    const EmulatorResponse a = emu_->Handle(r);
    return {a.status, json::parse(a.body, nullptr, false)};
  }
  static std::string Group(const std::string& group) {
    return std::string("zones/") + kZone + "/instanceGroupManagers/" + group;
  }
  // POSTs `verb` of `group` for `names`; the answer.
  std::pair<int, json> Act(const std::string& group, const std::string& verb,
                           const std::vector<std::string>& names, json extra = json::object()) {
    extra["instances"] = json::array();
    for (const std::string& n : names)
      extra["instances"].push_back(std::string("zones/") + kZone + "/instances/" + n);
    return Call("POST", Group(group) + "/" + verb, extra);
  }
  void Create(const std::string& group, const std::string& name) {
    auto [status, op] = Call("POST", Group(group) + "/createInstances", {{"instances", {{{"name", name}}}}});
    ASSERT_EQ(status, 200) << op.dump();
  }
  // The member's {currentAction, instanceStatus}.
  std::pair<std::string, std::string> Member(const std::string& group, const std::string& name) {
    auto [status, list] = Call("POST", Group(group) + "/listManagedInstances");
    EXPECT_EQ(status, 200) << list.dump();
    for (const json& m : list.value("managedInstances", json::array())) {
      if (m["name"] == name) return {m["currentAction"], m.value("instanceStatus", "")};
    }
    return {"(absent)", ""};
  }
  json Mig(const std::string& group) { return Call("GET", Group(group)).second; }
  json Instance(const std::string& name) {
    return Call("GET", std::string("zones/") + kZone + "/instances/" + name).second;
  }

  ManualClock clock_;
  std::unique_ptr<GcpEmulator> emu_;
};

using Pair = std::pair<std::string, std::string>;

TEST_F(GcpWarmEmulator, StopMovesAMemberToTheStoppedPoolAndStartBringsTheSameVmBackFasterThanACreate) {
  ASSERT_NO_FATAL_FAILURE(Create("l4", "node-a"));
  clock_.Advance(Seconds(122));
  ASSERT_EQ(Member("l4", "node-a"), Pair("NONE", "RUNNING"));
  const std::string id = Instance("node-a")["id"];
  auto [status, op] = Act("l4", "stopInstances", {"node-a"}, {{"forceStop", false}});
  ASSERT_EQ(status, 200) << op.dump();
  EXPECT_EQ(op["operationType"], "compute.instanceGroupManagers.stopInstances");
  EXPECT_NE(op["targetLink"].get<std::string>().find("/instanceGroupManagers/l4"), std::string::npos);
  EXPECT_EQ(Member("l4", "node-a"), Pair("STOPPING", "STOPPING"));
  json mig = Mig("l4");
  EXPECT_EQ(mig["targetSize"], 0);
  EXPECT_EQ(mig["targetStoppedSize"], 1);
  EXPECT_EQ(mig["targetSuspendedSize"], 0);
  EXPECT_EQ(mig["currentActions"]["stopping"], 1);
  EXPECT_EQ(mig["status"]["isStable"], false);

  clock_.Advance(Seconds(10));
  EXPECT_EQ(Member("l4", "node-a"), Pair("NONE", "TERMINATED"));
  EXPECT_EQ(Instance("node-a")["status"], "TERMINATED");
  EXPECT_TRUE(Instance("node-a").contains("lastStopTimestamp"));
  EXPECT_EQ(Mig("l4")["status"]["isStable"], true);
  // A stopped VM holds no GPU quota.
  const json region = Call("GET", "regions/us-central1").second;
  EXPECT_EQ(region["quotas"][0]["usage"], 0) << region.dump();

  // Stopping it again changes nothing.
  EXPECT_EQ(Act("l4", "stopInstances", {"node-a"}).first, 200);
  EXPECT_EQ(Mig("l4")["targetStoppedSize"], 1);

  ASSERT_EQ(Act("l4", "startInstances", {"node-a"}).first, 200);
  EXPECT_EQ(Member("l4", "node-a"), Pair("STARTING", "PROVISIONING"));
  mig = Mig("l4");
  EXPECT_EQ(mig["targetSize"], 1);
  EXPECT_EQ(mig["targetStoppedSize"], 0);
  EXPECT_EQ(mig["currentActions"]["starting"], 1);
  clock_.Advance(Seconds(29));
  EXPECT_EQ(Member("l4", "node-a"), Pair("STARTING", "STAGING"));
  clock_.Advance(Seconds(1));
  EXPECT_EQ(Member("l4", "node-a"), Pair("NONE", "RUNNING")) << "30 s (start_latency), not a create's 122 s";
  EXPECT_EQ(Instance("node-a")["id"], id) << "the same VM";
}

TEST_F(GcpWarmEmulator, SuspendAndResumeGoThroughSuspendingAndTheSuspendedPool) {
  ASSERT_NO_FATAL_FAILURE(Create("cpu", "cpu-a"));
  clock_.Advance(Seconds(122));
  // forceSuspend skips the group's 5 min initial delay.
  ASSERT_EQ(Act("cpu", "suspendInstances", {"cpu-a"}, {{"forceSuspend", true}}).first, 200);
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("SUSPENDING", "SUSPENDING"));
  EXPECT_EQ(Mig("cpu")["currentActions"]["suspending"], 1);
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("NONE", "SUSPENDED"));
  json mig = Mig("cpu");
  EXPECT_EQ(mig["targetSize"], 0);
  EXPECT_EQ(mig["targetSuspendedSize"], 1);
  EXPECT_EQ(mig["targetStoppedSize"], 0);
  EXPECT_TRUE(Instance("cpu-a").contains("lastSuspendedTimestamp"));

  ASSERT_EQ(Act("cpu", "resumeInstances", {"cpu-a"}).first, 200);
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("RESUMING", "PROVISIONING"));
  EXPECT_EQ(Mig("cpu")["currentActions"]["resuming"], 1);
  clock_.Advance(Seconds(30));
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("NONE", "RUNNING"));
  mig = Mig("cpu");
  EXPECT_EQ(mig["targetSize"], 1);
  EXPECT_EQ(mig["targetSuspendedSize"], 0);
}

TEST_F(GcpWarmEmulator, TheStandbyPolicysInitialDelayHoldsAStopUnlessForced) {
  ASSERT_NO_FATAL_FAILURE(Create("cpu", "cpu-a"));
  clock_.Advance(Seconds(122));
  EXPECT_EQ(Mig("cpu")["standbyPolicy"]["initialDelaySec"], 300);
  ASSERT_EQ(Act("cpu", "stopInstances", {"cpu-a"}).first, 200);
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("STOPPING", "RUNNING")) << "waits for 5 min after its creation";
  clock_.Advance(Seconds(300 - 122));
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("STOPPING", "STOPPING"));
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("NONE", "TERMINATED"));
  // resize counts running members only: the stopped one stays stopped.
  ASSERT_EQ(Call("POST", Group("cpu") + "/resize?size=0").first, 200);
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("NONE", "TERMINATED"));
  EXPECT_EQ(Mig("cpu")["targetStoppedSize"], 1);
}

TEST_F(GcpWarmEmulator, RefusesWhatComputeEngineRefuses) {
  ASSERT_NO_FATAL_FAILURE(Create("l4", "node-a"));
  ASSERT_NO_FATAL_FAILURE(Create("cpu", "cpu-a"));
  ASSERT_NO_FATAL_FAILURE(Create("cpu", "cpu-b"));  // no capacity: stays CREATING
  clock_.Advance(Seconds(122));
  ASSERT_EQ(Act("cpu", "suspendInstances", {"cpu-a"}, {{"forceSuspend", true}}).first, 200);
  struct Case {
    std::string name, group, verb;
    std::vector<std::string> names;
    int want_status;
    std::string want_reason, want_message;
  };
  const std::vector<Case> cases = {
      {"not a member", "l4", "stopInstances", {"cpu-a"}, 400, "invalid", "not members of the group"},
      {"an instance of no group",
       "l4",
       "startInstances",
       {"ghost"},
       400,
       "invalid",
       "zones/us-central1-a/instances/ghost"},
      {"a GPU VM cannot be suspended",
       "l4",
       "suspendInstances",
       {"node-a"},
       400,
       "unsupportedOperation",
       "instances with GPUs cannot be suspended"},
      {"a member being created",
       "cpu",
       "stopInstances",
       {"cpu-b"},
       400,
       "unsupportedOperation",
       "is being created"},
      {"stopping a suspended member",
       "cpu",
       "stopInstances",
       {"cpu-a"},
       400,
       "unsupportedOperation",
       "is suspended"},
      {"starting a suspended member",
       "cpu",
       "startInstances",
       {"cpu-a"},
       400,
       "unsupportedOperation",
       "use resumeInstances"},
      {"no instances", "l4", "stopInstances", {}, 400, "invalid", "non-empty list"},
      {"an unknown group",
       "nope",
       "stopInstances",
       {"node-a"},
       404,
       "notFound",
       "instanceGroupManagers/nope"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto [status, body] = Act(c.group, c.verb, c.names);
    EXPECT_EQ(status, c.want_status) << body.dump();
    EXPECT_EQ(body["error"]["errors"][0]["reason"], c.want_reason) << body.dump();
    EXPECT_NE(body["error"]["message"].get<std::string>().find(c.want_message), std::string::npos)
        << body.dump();
  }
  EXPECT_EQ(Member("l4", "node-a"), Pair("NONE", "RUNNING")) << "a refused call changes nothing";
  // Starting a running member is nothing to do.
  EXPECT_EQ(Act("l4", "startInstances", {"node-a"}).first, 200);
  EXPECT_EQ(Member("l4", "node-a"), Pair("NONE", "RUNNING"));
}

TEST_F(GcpWarmEmulator, AResumeWithoutCapacityWaitsWithTheCapacityErrorAndRetries) {
  ASSERT_NO_FATAL_FAILURE(Create("cpu", "cpu-a"));
  clock_.Advance(Seconds(122));
  ASSERT_EQ(Act("cpu", "suspendInstances", {"cpu-a"}, {{"forceSuspend", true}}).first, 200);
  clock_.Advance(Seconds(10));
  // The suspended VM gave its place up: another takes it.
  ASSERT_NO_FATAL_FAILURE(Create("cpu", "cpu-b"));
  clock_.Advance(Seconds(122));
  ASSERT_EQ(Member("cpu", "cpu-b"), Pair("NONE", "RUNNING"));

  auto [status, op] = Act("cpu", "resumeInstances", {"cpu-a"});
  ASSERT_EQ(status, 200) << "accepted: the group carries the resume out";
  auto [list_status, list] = Call("POST", Group("cpu") + "/listManagedInstances");
  json a;
  for (const json& m : list["managedInstances"]) {
    if (m["name"] == "cpu-a") a = m;
  }
  EXPECT_EQ(a["currentAction"], "RESUMING");
  EXPECT_EQ(a["instanceStatus"], "SUSPENDED");
  ASSERT_TRUE(a.contains("lastAttempt")) << a.dump();
  EXPECT_EQ(a["lastAttempt"]["errors"]["errors"][0]["code"], "ZONE_RESOURCE_POOL_EXHAUSTED");

  // Once cpu-b is gone, the next retry resumes it.
  ASSERT_EQ(Call("POST", Group("cpu") + "/deleteInstances",
                 {{"instances", {std::string("zones/") + kZone + "/instances/cpu-b"}}})
                .first,
            200);
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("RESUMING", "PROVISIONING"));
  clock_.Advance(Seconds(30));
  EXPECT_EQ(Member("cpu", "cpu-a"), Pair("NONE", "RUNNING"));
}

TEST_F(GcpWarmEmulator, StoppingAStartedMemberPutsItBackAndDeletingAStoppedOneRemovesIt) {
  ASSERT_NO_FATAL_FAILURE(Create("l4", "node-a"));
  clock_.Advance(Seconds(122));
  ASSERT_EQ(Act("l4", "stopInstances", {"node-a"}).first, 200);
  clock_.Advance(Seconds(10));
  ASSERT_EQ(Act("l4", "startInstances", {"node-a"}).first, 200);
  ASSERT_EQ(Member("l4", "node-a"), Pair("STARTING", "PROVISIONING"));
  ASSERT_EQ(Act("l4", "stopInstances", {"node-a"}).first, 200);
  EXPECT_EQ(Member("l4", "node-a"), Pair("STOPPING", "STOPPING"));
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Member("l4", "node-a"), Pair("NONE", "TERMINATED"));

  ASSERT_EQ(Call("POST", Group("l4") + "/deleteInstances",
                 {{"instances", {std::string("zones/") + kZone + "/instances/node-a"}}})
                .first,
            200);
  EXPECT_EQ(Member("l4", "node-a"), Pair("DELETING", "STOPPING"));
  clock_.Advance(Seconds(5));
  EXPECT_EQ(Member("l4", "node-a").first, "(absent)");
  EXPECT_EQ(Mig("l4")["targetStoppedSize"], 0);
}

TEST_F(GcpWarmEmulator, ReadsTheWarmScenarioKeys) {
  auto s = ParseGcpScenario(
      "stop_latency: 20s\nstart_latency: 45s\ngpu_suspend: true\n"
      "managed_instance_groups:\n  - {name: g, zone: us-central1-a, standby_initial_delay: 2m}\n");
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(s->stop_latency, Seconds(20));
  EXPECT_EQ(s->start_latency, Seconds(45));
  EXPECT_TRUE(s->gpu_suspend);
  EXPECT_EQ(s->groups[0].standby_initial_delay, Seconds(120));
  const GcpScenario defaults;
  EXPECT_EQ(defaults.start_latency, Seconds(60));
  EXPECT_FALSE(defaults.gpu_suspend);
  auto bad = ParseGcpScenario("start_latency: soon\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("start_latency"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace gpuscaler::sim::gcp_warm_emulator_test
