// AwsProvider: a gang's launch (all_or_nothing) into an Auto Scaling group,
// against the cloud emulator in process. A group has no all-or-nothing call:
// the provider raises it, waits for the whole gang (the provider's sleep
// moves the ManualClock), and gives back a gang that does not come up whole,
// leaving the group's desired capacity where it was; MaxSize is checked
// before anything is raised; and no replay raises a given-back gang again.
#include <gtest/gtest.h>

#include <set>

#include "cloud/emulated_aws.h"

namespace gpuscaler::cloud {
namespace {

using emulated::Creds;
using emulated::Installation;
using emulated::ProviderOptions;
using emulated::Start;
using emulated::TrainRequest;
using sim::CloudEmulator;
using sim::EmulatorScenario;
using sim::ScriptedGroup;

constexpr Seconds kGangTimeout{20};

ScriptedGroup GangGroup(int min, int max, int desired) {
  ScriptedGroup g;
  g.name = "gpu-a";
  g.min_size = min;
  g.max_size = max;
  g.desired_capacity = desired;
  g.zones = {"us-east-1a", "us-east-1b"};
  g.tags[kClusterTag] = "a";
  return g;
}

// g5.xlarge for `in_a` live instances in us-east-1a and none in us-east-1b.
std::vector<sim::CapacityLimit> RoomInZoneA(int in_a) {
  return {{"g5.xlarge", "us-east-1a", std::nullopt, in_a, "InsufficientInstanceCapacity", {}, {}},
          {"g5.xlarge", "us-east-1b", std::nullopt, 0, "InsufficientInstanceCapacity", {}, {}}};
}

LaunchRequest Gang(int count, std::string token) {
  LaunchRequest r = TrainRequest("gpu-a", count, std::move(token));
  r.all_or_nothing = true;
  return r;
}

std::vector<std::string> IdsOf(const std::vector<Instance>& instances) {
  std::vector<std::string> out;
  for (const Instance& i : instances) out.push_back(i.instance_id);
  return out;
}

// Fails every call of `action` with a ValidationError while `failing`.
class FailingTransport final : public Transport {
 public:
  FailingTransport(CloudEmulator& emulator, std::string action)
      : inner_(emulator), action_(std::move(action)) {}
  Result<TransportResponse> Send(const TransportRequest& request) override {
    if (failing && request.body.find("Action=" + action_ + "&") != std::string::npos) {
      return TransportResponse{400,
                               {{"Content-Type", "text/xml"}},
                               "<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code>"
                               "<Message>injected</Message></Error><RequestId>1</RequestId></ErrorResponse>"};
    }
    return inner_.Send(request);
  }
  bool failing = true;

 private:
  sim::EmulatorTransport inner_;
  std::string action_;
};

class AsgGang : public ::testing::Test {
 protected:
  AsgGang() : clock_(Start()) {}

  void Boot(EmulatorScenario s) {
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    a_ = Restart();
  }
  static AwsProviderOptions Options() {
    AwsProviderOptions o = ProviderOptions("a");
    o.gang_timeout = kGangTimeout;
    o.gang_poll_interval = std::chrono::seconds(5);
    return o;
  }
  // A fresh process: nothing remembered. Its sleep moves the clock.
  std::unique_ptr<Installation> Restart() {
    return std::make_unique<Installation>(
        *emulator_, clock_, Options(), Creds(),
        [this](std::chrono::milliseconds d) { clock_.Advance(std::chrono::duration_cast<Seconds>(d)); });
  }

  AutoScalingGroup Described() {
    DescribeAutoScalingGroupsRequest req;
    req.names = {"gpu-a"};
    auto body = a_->client.Query("autoscaling", DescribeAutoScalingGroupsQuery(req));
    EXPECT_TRUE(body.ok());
    auto page = ParseDescribeAutoScalingGroups(body.ok() ? *body : "");
    EXPECT_TRUE(page.ok() && page->groups.size() == 1);
    return page.ok() && !page->groups.empty() ? page->groups[0] : AutoScalingGroup{};
  }
  // Every instance the launch with `token` made, by id, with its state.
  std::map<std::string, std::string> OfLaunch(const std::string& token) {
    std::map<std::string, std::string> out;
    for (const sim::EmulatedInstance& i : emulator_->Instances()) {
      if (i.tags.count(kIntentTag) != 0 && i.tags.at(kIntentTag) == token) out[i.instance_id] = i.state;
    }
    return out;
  }
  int Live(const std::string& token) {
    int n = 0;
    for (const auto& [id, state] : OfLaunch(token)) n += state == "pending" || state == "running";
    return n;
  }
  int Calls(const std::string& action) {
    int n = 0;
    for (const sim::EmulatorRequestRecord& r : emulator_->Requests())
      n += r.action == action && r.status == 200;
    return n;
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<Installation> a_;
};

// The group launches 10 s after the raise: the provider waits for all three.
TEST_F(AsgGang, AGangWithRoomAndCapacityComesUpWhole) {
  EmulatorScenario s;
  s.group_launch_delay = Seconds(10);
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  auto r = a_->provider.Launch(Gang(3, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->errors.empty()) << r->errors[0].error.ToString();
  ASSERT_EQ(r->instances.size(), 3u);
  for (const Instance& i : r->instances) EXPECT_EQ(i.tags.at(kIntentTag), "a-1-0");
  AutoScalingGroup g = Described();
  EXPECT_EQ(g.desired_capacity, 4);
  EXPECT_EQ(g.tags.at(kIntentGangTag), kGangYes);

  // A restarted process replaying it gets the same nodes and raises nothing.
  const int raises = Calls("SetDesiredCapacity");
  auto replayed = Restart()->provider.Launch(TrainRequest("gpu-a", 3, "a-1-0"));
  ASSERT_TRUE(replayed.ok()) << replayed.error().ToString();
  EXPECT_EQ(IdsOf(replayed->instances), IdsOf(r->instances));
  EXPECT_EQ(Calls("SetDesiredCapacity"), raises);
  EXPECT_EQ(Described().desired_capacity, 4);
}

// Capacity for two of three: the group launches two and fails the third;
// both are given back through the group and the desired capacity is what it
// was before.
TEST_F(AsgGang, AGangThatComesUpInPartIsGivenBackWhole) {
  EmulatorScenario s;
  s.capacity = RoomInZoneA(3);  // the group's one instance, and two more
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  const std::string before = Described().instances.at(0).instance_id;
  auto r = a_->provider.Launch(Gang(3, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->instances.empty());
  ASSERT_EQ(r->errors.size(), 1u);
  const Error& e = r->errors[0].error;
  EXPECT_EQ(e.category(), ErrorCategory::kCapacity);
  EXPECT_NE(e.message().find(
                "auto scaling group 'gpu-a': a gang needs all 3 nodes; 2 came up within 20 s, and every "
                "one of them is given back: "),
            std::string::npos)
      << e.message();
  EXPECT_NE(e.message().find("InsufficientInstanceCapacity"), std::string::npos) << e.message();
  EXPECT_EQ(r->errors[0].offering_key, "g5.xlarge/us-east-1b/on-demand");  // the zone the activity names

  const std::map<std::string, std::string> made = OfLaunch("a-1-0");
  ASSERT_EQ(made.size(), 2u);
  for (const auto& [id, state] : made) EXPECT_EQ(state, "shutting-down") << id;
  EXPECT_EQ(Calls("TerminateInstanceInAutoScalingGroup"), 2);
  AutoScalingGroup g = Described();
  EXPECT_EQ(g.desired_capacity, 1);
  EXPECT_EQ(g.tags.at(kIntentGangTag), kGangGivenBack);

  // The group launches nothing more, and its instance from before stays.
  clock_.Advance(Seconds(120));
  g = Described();
  ASSERT_EQ(g.instances.size(), 1u);
  EXPECT_EQ(g.instances[0].instance_id, before);
  EXPECT_EQ(g.desired_capacity, 1);
  for (const auto& [id, state] : OfLaunch("a-1-0")) EXPECT_EQ(state, "terminated") << id;
}

TEST_F(AsgGang, AGangTheGroupHasNoRoomForRaisesNothing) {
  EmulatorScenario s;
  s.groups = {GangGroup(0, 5, 3)};
  Boot(s);
  auto r = a_->provider.Launch(Gang(3, "a-1-0"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kCapacity);
  EXPECT_NE(r.error().message().find("a gang needs 3 nodes and auto scaling group 'gpu-a' has room for 2"),
            std::string::npos)
      << r.error().message();
  EXPECT_EQ(Described().desired_capacity, 3);
  EXPECT_EQ(Calls("SetDesiredCapacity"), 0);
  EXPECT_EQ(Calls("CreateOrUpdateTags"), 0);
}

// The group launches a minute after the raise, past the 20 s bound: the
// gang is given back with none of it up, and nothing is launched later.
TEST_F(AsgGang, AGangNotUpWithinTheBoundIsGivenBack) {
  EmulatorScenario s;
  s.group_launch_delay = Seconds(60);
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  const WallTime started = clock_.WallNow();
  auto r = a_->provider.Launch(Gang(2, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->instances.empty());
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(r->errors[0].error.message().find("a gang needs all 2 nodes; 0 came up within 20 s"),
            std::string::npos)
      << r->errors[0].error.message();
  EXPECT_GE(clock_.WallNow() - started, kGangTimeout);
  EXPECT_LT(clock_.WallNow() - started, Seconds(60));
  EXPECT_EQ(Described().desired_capacity, 1);
  clock_.Advance(Seconds(120));
  EXPECT_TRUE(OfLaunch("a-1-0").empty());
  EXPECT_EQ(Described().instances.size(), 1u);
}

// A launch that is no gang, after a gang given back in the same group,
// keeps what the group launched (partial, with the capacity error), and so
// does its replay after a restart.
TEST_F(AsgGang, ALaunchThatIsNoGangKeepsAPartialResult) {
  EmulatorScenario s;
  s.capacity = RoomInZoneA(3);
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  auto gang = a_->provider.Launch(Gang(3, "a-1-0"));
  ASSERT_TRUE(gang.ok() && gang->instances.empty());

  auto lone = a_->provider.Launch(TrainRequest("gpu-a", 3, "a-2-0"));
  ASSERT_TRUE(lone.ok()) << lone.error().ToString();
  EXPECT_EQ(lone->instances.size(), 2u);
  ASSERT_EQ(lone->errors.size(), 1u);
  EXPECT_EQ(lone->errors[0].error.category(), ErrorCategory::kCapacity);
  AutoScalingGroup g = Described();
  EXPECT_EQ(g.desired_capacity, 4);
  EXPECT_EQ(g.tags.at(kIntentGangTag), kGangNo);

  auto replayed = Restart()->provider.Launch(TrainRequest("gpu-a", 3, "a-2-0"));
  ASSERT_TRUE(replayed.ok()) << replayed.error().ToString();
  EXPECT_EQ(IdsOf(replayed->instances), IdsOf(lone->instances));
  EXPECT_EQ(Live("a-2-0"), 2);
  EXPECT_EQ(Described().desired_capacity, 4);
  EXPECT_EQ(Calls("TerminateInstanceInAutoScalingGroup"), 2) << "the gang's two only";
}

// A given-back gang replayed in the same process, and by a restarted one
// (whose request, like the controller's recovery, does not say gang): the
// same error, no raise, no instance.
TEST_F(AsgGang, AReplayAfterAGiveBackRaisesNothing) {
  EmulatorScenario s;
  s.capacity = RoomInZoneA(3);
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  ASSERT_TRUE(a_->provider.Launch(Gang(3, "a-1-0")).ok());
  ASSERT_EQ(Described().desired_capacity, 1);
  const int raises = Calls("SetDesiredCapacity");
  const size_t instances = emulator_->Instances().size();

  auto again = a_->provider.Launch(Gang(3, "a-1-0"));
  auto replayed = Restart()->provider.Launch(TrainRequest("gpu-a", 3, "a-1-0"));
  for (const auto* r : {&again, &replayed}) {
    ASSERT_TRUE(r->ok()) << r->error().ToString();
    EXPECT_TRUE((*r)->instances.empty());
    ASSERT_EQ((*r)->errors.size(), 1u);
    EXPECT_EQ((*r)->errors[0].error.category(), ErrorCategory::kCapacity);
    EXPECT_NE((*r)->errors[0].error.message().find("a gang needs all 3 nodes"), std::string::npos);
  }
  clock_.Advance(Seconds(60));
  EXPECT_EQ(Calls("SetDesiredCapacity"), raises);
  EXPECT_EQ(emulator_->Instances().size(), instances);
  EXPECT_EQ(Described().desired_capacity, 1);
  EXPECT_EQ(Live("a-1-0"), 0);
}

// A crash between the tags and the raise: a restarted process's replay
// (without all_or_nothing, as the controller's recovery sends it) finishes
// the raise as the gang's and gives the partial gang back.
TEST_F(AsgGang, AReplayAfterACrashBeforeTheRaiseFinishesItAsAGang) {
  EmulatorScenario s;
  s.capacity = RoomInZoneA(3);
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  ASSERT_TRUE(a_->client
                  .Query("autoscaling", CreateOrUpdateTagsQuery("gpu-a", {{kIntentTag, "a-1-0", true},
                                                                          {kIntentDesiredTag, "4", false},
                                                                          {kIntentGangTag, kGangYes, false},
                                                                          {kOwnerTag, "train", true}}))
                  .ok());
  auto replayed = Restart()->provider.Launch(TrainRequest("gpu-a", 3, "a-1-0"));
  ASSERT_TRUE(replayed.ok()) << replayed.error().ToString();
  EXPECT_TRUE(replayed->instances.empty());
  ASSERT_EQ(replayed->errors.size(), 1u);
  EXPECT_NE(replayed->errors[0].error.message().find("2 came up"), std::string::npos)
      << replayed->errors[0].error.message();
  EXPECT_EQ(OfLaunch("a-1-0").size(), 2u);
  EXPECT_EQ(Live("a-1-0"), 0);
  EXPECT_EQ(Described().desired_capacity, 1);
}

// The give-back's terminations fail: the launch says so, and a restarted
// process's replay finishes the give-back instead of raising again.
TEST_F(AsgGang, AReplayFinishesAGiveBackThatWasCutShort) {
  EmulatorScenario s;
  s.capacity = RoomInZoneA(3);
  s.groups = {GangGroup(0, 5, 1)};
  Boot(s);
  FailingTransport failing(*emulator_, "TerminateInstanceInAutoScalingGroup");
  StaticCredentialsProvider creds(Creds(), "test");
  AwsClient client(Installation::ClientOptions(), failing, creds, clock_, [](std::chrono::milliseconds) {});
  AwsProvider provider(Options(), client, clock_);
  auto r = provider.Launch(Gang(3, "a-1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->instances.empty());
  ASSERT_EQ(r->errors.size(), 1u);
  const std::string& message = r->errors[0].error.message();
  EXPECT_EQ(message.rfind("giving the gang back also failed (TerminateInstanceInAutoScalingGroup: ", 0), 0u)
      << message;
  EXPECT_NE(message.find("injected"), std::string::npos) << message;
  EXPECT_NE(message.find("a gang needs all 3 nodes; 2 came up"), std::string::npos) << message;
  EXPECT_EQ(Live("a-1-0"), 2);
  AutoScalingGroup g = Described();
  EXPECT_EQ(g.desired_capacity, 3) << "lowered to what came up";
  EXPECT_EQ(g.tags.at(kIntentGangTag), kGangGivingBack);

  const int raises = Calls("SetDesiredCapacity");
  auto replayed = Restart()->provider.Launch(TrainRequest("gpu-a", 3, "a-1-0"));
  ASSERT_TRUE(replayed.ok()) << replayed.error().ToString();
  EXPECT_TRUE(replayed->instances.empty());
  ASSERT_EQ(replayed->errors.size(), 1u);
  EXPECT_EQ(replayed->errors[0].error.message().find("also failed"), std::string::npos)
      << replayed->errors[0].error.message();
  EXPECT_EQ(Calls("SetDesiredCapacity"), raises);
  EXPECT_EQ(Live("a-1-0"), 0);
  g = Described();
  EXPECT_EQ(g.desired_capacity, 1);
  EXPECT_EQ(g.tags.at(kIntentGangTag), kGangGivenBack);
}

}  // namespace
}  // namespace gpuscaler::cloud
