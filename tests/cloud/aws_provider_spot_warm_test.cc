// AwsProvider's spot warm capacity against the cloud emulator in process (a
// ManualClock): a launch tagged to stop on interruption goes out as
// RunInstances with a persistent Spot request (offering by offering, past a
// capacity error; a replay returns the same instance), and such an instance
// stops and starts where a one-time one cannot; a reclaim stops it (its
// owner's start is then a capacity error) and EC2 starts it again once spot
// capacity is back; Terminate cancels its Spot
// request first, so EC2 launches no replacement.
#include <gtest/gtest.h>

#include <algorithm>

#include "cloud/emulated_aws.h"

namespace gpuscaler::cloud::aws_provider_spot_warm {
namespace {

using emulated::Installation;
using emulated::Off;
using emulated::ProviderOptions;
using emulated::Start;
using emulated::TrainRequest;
using sim::CloudEmulator;
using sim::EmulatorScenario;

constexpr Seconds kSpotLaunch{120};
constexpr Seconds kSpotStart{60};
constexpr Seconds kSpotStop{15};
// The tag the controller puts on a spot launch of a pool with spot warm
// capacity (solver/warm_pool.h kWarmInterruptionTag).
constexpr const char* kStopTag = "gpuscaler.io/interruption-behavior";

EmulatorScenario SpotScenario() {
  EmulatorScenario s;
  s.launch_latency = kSpotLaunch;
  s.start_latency = kSpotStart;
  s.stop_latency = kSpotStop;
  // No spot g5.xlarge in us-east-1a: a launch there falls back to 1b.
  s.capacity.push_back({"g5.xlarge", "us-east-1a", CapacityType::kSpot, 0, "InsufficientInstanceCapacity", {}, {}});
  return s;
}

// A spot launch of pool "train" over us-east-1a then us-east-1b, tagged to
// stop on interruption when `stoppable`.
LaunchRequest SpotRequest(int count, const std::string& token, bool stoppable) {
  LaunchRequest r = TrainRequest("", count, token);
  r.offerings = {Off("g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.4),
                 Off("g5.xlarge", "us-east-1b", CapacityType::kSpot, 0.4)};
  if (stoppable) r.tags[kStopTag] = "stop";
  return r;
}

class SpotWarmProvider : public ::testing::Test {
 protected:
  SpotWarmProvider() : clock_(Start()) {}

  void Boot(EmulatorScenario s = SpotScenario()) {
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    ours_ = std::make_unique<Installation>(*emulator_, clock_, ProviderOptions("test-cluster"));
  }
  std::vector<std::string> LaunchSpot(int count, const std::string& token, bool stoppable) {
    auto launched = ours_->provider.Launch(SpotRequest(count, token, stoppable));
    EXPECT_TRUE(launched.ok()) << launched.error().ToString();
    std::vector<std::string> ids;
    for (const Instance& i : launched.ok() ? launched->instances : std::vector<Instance>{})
      ids.push_back(i.instance_id);
    return ids;
  }
  // The emulator's instance `id`, its state brought up to the clock (it
  // moves on when it answers a call).
  sim::EmulatedInstance Emulated(const std::string& id) {
    EXPECT_TRUE(ours_->provider.ListInstances().ok());
    for (const sim::EmulatedInstance& i : emulator_->Instances()) {
      if (i.instance_id == id) return i;
    }
    ADD_FAILURE() << "no instance " << id;
    return {};
  }
  int Calls(const std::string& action) {
    int n = 0;
    for (const sim::EmulatorRequestRecord& r : emulator_->Requests()) n += r.action == action;
    return n;
  }
  // Instances not shutting down or terminated.
  int NotGone() {
    int n = 0;
    for (const sim::EmulatedInstance& i : emulator_->Instances())
      n += i.state != "shutting-down" && i.state != "terminated";
    return n;
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<Installation> ours_;
};

TEST_F(SpotWarmProvider, AStoppableSpotLaunchIsAPersistentRequestThatStopsOnInterruption) {
  Boot();
  auto launched = ours_->provider.Launch(SpotRequest(1, "d-1", true));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->instances.size(), 1u);
  const Instance& inst = launched->instances[0];
  EXPECT_EQ(inst.offering.zone, "us-east-1b");
  EXPECT_EQ(inst.offering.capacity_type, CapacityType::kSpot);
  EXPECT_EQ(inst.tags.at(kStopTag), "stop");
  // us-east-1a had no spot capacity: its offering's error, not the call's.
  ASSERT_EQ(launched->errors.size(), 1u);
  EXPECT_EQ(launched->errors[0].offering_key, Off("g5.xlarge", "us-east-1a", CapacityType::kSpot).Key());
  EXPECT_EQ(launched->errors[0].error.category(), ErrorCategory::kCapacity);

  const sim::EmulatedInstance e = Emulated(inst.instance_id);
  EXPECT_EQ(e.lifecycle, CapacityType::kSpot);
  EXPECT_EQ(e.spot_request_type, "persistent");
  EXPECT_EQ(e.interruption_behavior, "stop");
  EXPECT_EQ(e.tags.at(kClusterTag), "test-cluster");
  EXPECT_EQ(e.tags.at(kOwnerTag), "train");
  EXPECT_EQ(e.launch_template, "");  // a template the emulator does not know: accepted as EC2's own
  EXPECT_EQ(Calls("RunInstances"), 2);
  EXPECT_EQ(Calls("CreateFleet"), 0) << "EC2 Fleet instant takes no persistent Spot request";

  // A replay of the launch (same token) gets the same instance, launches none.
  auto again = ours_->provider.Launch(SpotRequest(1, "d-1", true));
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  ASSERT_EQ(again->instances.size(), 1u);
  EXPECT_EQ(again->instances[0].instance_id, inst.instance_id);
  EXPECT_EQ(emulator_->Instances().size(), 1u);
}

TEST_F(SpotWarmProvider, APersistentSpotInstanceStopsAndStartsAndAOneTimeOneCannotStop) {
  Boot();
  const std::vector<std::string> stoppable = LaunchSpot(1, "d-1", true);
  const std::vector<std::string> one_time = LaunchSpot(1, "d-2", false);
  ASSERT_EQ(stoppable.size(), 1u);
  ASSERT_EQ(one_time.size(), 1u);
  EXPECT_EQ(Emulated(one_time[0]).spot_request_type, "") << "CreateFleet instant: a one-time request";
  clock_.Advance(kSpotLaunch);

  Status refused = ours_->provider.Stop(one_time, WarmState::kStopped);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("UnsupportedOperation"), std::string::npos) << refused.error().ToString();
  EXPECT_EQ(Emulated(one_time[0]).state, "running");

  ASSERT_TRUE(ours_->provider.Stop(stoppable, WarmState::kStopped).ok());
  clock_.Advance(kSpotStop);
  EXPECT_EQ(Emulated(stoppable[0]).state, "stopped");
  ASSERT_TRUE(ours_->provider.Start(stoppable).ok());
  EXPECT_EQ(Emulated(stoppable[0]).state, "pending");
  clock_.Advance(kSpotStart);
  auto listed = ours_->provider.ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  auto it = std::find_if(listed->begin(), listed->end(),
                         [&](const Instance& i) { return i.instance_id == stoppable[0]; });
  ASSERT_NE(it, listed->end());
  EXPECT_EQ(it->state, InstanceState::kRunning);
  EXPECT_EQ(it->offering.capacity_type, CapacityType::kSpot);
  EXPECT_EQ(it->tags.at(kStopTag), "stop") << "a restarted process still knows it can stop it";
}

TEST_F(SpotWarmProvider, AReclaimStopsItAndEc2StartsItAgainOnceSpotCapacityIsBack) {
  EmulatorScenario s = SpotScenario();
  // No spot g5.xlarge in us-east-1b from 10 to 30 minutes.
  s.capacity.push_back(
      {"g5.xlarge", "us-east-1b", CapacityType::kSpot, 0, "InsufficientInstanceCapacity", Seconds(600), Seconds(1800)});
  Boot(s);
  const std::vector<std::string> ids = LaunchSpot(1, "d-1", true);
  ASSERT_EQ(ids.size(), 1u);
  clock_.Advance(Seconds(600));
  ASSERT_TRUE(emulator_->Interrupt(ids[0], Seconds(120)).ok());
  clock_.Advance(Seconds(120));
  ASSERT_TRUE(ours_->provider.ListInstances().ok());
  clock_.Advance(Seconds(1));
  const sim::EmulatedInstance stopped = Emulated(ids[0]);
  EXPECT_EQ(stopped.state, "stopped");
  EXPECT_TRUE(stopped.interrupted);

  // Only EC2 starts an interrupted instance again: to its owner a shortage
  // of the offering, and no StartInstances is sent.
  Status start = ours_->provider.Start(ids);
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.error().category(), ErrorCategory::kCapacity) << start.error().ToString();
  EXPECT_NE(start.error().message().find("stopped by a Spot interruption"), std::string::npos)
      << start.error().ToString();
  EXPECT_EQ(Calls("StartInstances"), 0);
  // EC2 refuses it too.
  auto refused = ours_->client.Query("ec2", StartInstancesQuery(ids));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("IncorrectSpotRequestState"), std::string::npos)
      << refused.error().ToString();

  clock_.Advance(Seconds(1800 - 600 - 121));  // the shortage is over
  ASSERT_TRUE(ours_->provider.ListInstances().ok());
  EXPECT_EQ(Emulated(ids[0]).state, "pending");
  EXPECT_FALSE(Emulated(ids[0]).interrupted);
  EXPECT_EQ(emulator_->Instances().size(), 1u) << "the same instance, not a new one";
}

TEST_F(SpotWarmProvider, TerminateCancelsThePersistentRequestSoEc2LaunchesNoReplacement) {
  Boot();
  const std::vector<std::string> ids = LaunchSpot(1, "d-1", true);
  ASSERT_EQ(ids.size(), 1u);
  clock_.Advance(kSpotLaunch);
  ASSERT_TRUE(ours_->provider.Stop(ids, WarmState::kStopped).ok());
  clock_.Advance(kSpotStop);
  ASSERT_TRUE(ours_->provider.Terminate(ids).ok());
  EXPECT_EQ(Calls("CancelSpotInstanceRequests"), 1);
  EXPECT_TRUE(Emulated(ids[0]).spot_request_cancelled);
  EXPECT_EQ(Emulated(ids[0]).state, "shutting-down");
  EXPECT_EQ(NotGone(), 0) << "a replacement was launched";
  EXPECT_EQ(emulator_->Instances().size(), 1u);
  // Terminated again (idempotent): nothing more to cancel.
  ASSERT_TRUE(ours_->provider.Terminate(ids).ok());
  EXPECT_EQ(Calls("CancelSpotInstanceRequests"), 1);
}

TEST_F(SpotWarmProvider, APersistentRequestNotCancelledReplacesItsTerminatedInstance) {
  Boot();
  const std::vector<std::string> ids = LaunchSpot(1, "d-1", true);
  ASSERT_EQ(ids.size(), 1u);
  auto body = ours_->client.Query("ec2", TerminateInstancesQuery(ids));
  ASSERT_TRUE(body.ok()) << body.error().ToString();
  ASSERT_EQ(emulator_->Instances().size(), 2u);
  const sim::EmulatedInstance replacement = emulator_->Instances()[1];
  EXPECT_EQ(replacement.state, "pending");
  EXPECT_EQ(replacement.zone, "us-east-1b");
  EXPECT_EQ(replacement.spot_request_id, Emulated(ids[0]).spot_request_id);
  EXPECT_EQ(replacement.tags.at(kOwnerTag), "train");
}

TEST_F(SpotWarmProvider, EmulatorRefusesStopBehaviorOnAOneTimeRequest) {
  Boot();
  QueryParams q = {{"Action", "RunInstances"},
                   {"Version", "2016-11-15"},
                   {"InstanceType", "g5.xlarge"},
                   {"MinCount", "1"},
                   {"MaxCount", "1"},
                   {"Placement.AvailabilityZone", "us-east-1b"},
                   {"LaunchTemplate.LaunchTemplateName", "gpu-nodes"},
                   {"InstanceMarketOptions.MarketType", "spot"},
                   {"InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior", "stop"}};
  auto body = ours_->client.Query("ec2", q);
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.error().message().find("InvalidParameterCombination"), std::string::npos)
      << body.error().ToString();
  EXPECT_TRUE(emulator_->Instances().empty());
}

}  // namespace
}  // namespace gpuscaler::cloud::aws_provider_spot_warm
