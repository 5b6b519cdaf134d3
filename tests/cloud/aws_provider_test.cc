// AwsProvider and AwsClient against the cloud emulator, in process (the
// emulator's handler behind the Transport seam): no sockets, no sleeping, a
// ManualClock.
#include "gpuscaler/cloud/aws_provider.h"

#include <gtest/gtest.h>

#include "cloud/emulated_aws.h"

namespace gpuscaler::cloud {
namespace {

using emulated::Creds;
using emulated::Off;
using emulated::Start;
using sim::CloudEmulator;
using sim::EmulatorScenario;

class AwsProviderTest : public ::testing::Test {
 protected:
  AwsProviderTest() : clock_(Start()) {}

  void Boot(EmulatorScenario s = {}, Credentials creds = Creds()) {
    aws_.reset();
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    aws_ = std::make_unique<emulated::Installation>(*emulator_, clock_, emulated::ProviderOptions("test-cluster"),
                                                    creds, [this](std::chrono::milliseconds d) { sleeps_.push_back(d); });
    client_ = &aws_->client;
    provider_ = &aws_->provider;
  }

  LaunchRequest Request(std::vector<Offering> offerings, int count, std::string token) {
    LaunchRequest r;
    r.pool = "train";
    r.offerings = std::move(offerings);
    r.count = count;
    r.tags = {{"gpuscaler.io/intent", token}};
    r.idempotency_token = std::move(token);
    return r;
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<emulated::Installation> aws_;
  AwsClient* client_ = nullptr;
  AwsProvider* provider_ = nullptr;
  std::vector<std::chrono::milliseconds> sleeps_;
};

TEST_F(AwsProviderTest, LaunchesTagsListsAndReplaysIdempotently) {
  Boot();
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand, 1.006)}, 3, "decision-7/launch-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 3u);
  EXPECT_TRUE(r->errors.empty());
  EXPECT_EQ(r->instances[0].pool, "train");
  EXPECT_EQ(r->instances[0].offering.Key(), "g5.xlarge/us-east-1a/on-demand");
  EXPECT_DOUBLE_EQ(r->instances[0].offering.usd_per_hour, 1.006);
  EXPECT_EQ(r->instances[0].state, InstanceState::kPending);

  auto again = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 3, "decision-7/launch-0"));
  ASSERT_TRUE(again.ok());
  std::vector<std::string> a, b;
  for (const auto& i : r->instances) a.push_back(i.instance_id);
  for (const auto& i : again->instances) b.push_back(i.instance_id);
  EXPECT_EQ(a, b);
  EXPECT_EQ(emulator_->Instances().size(), 3u);

  clock_.Advance(Seconds(40));
  auto listed = provider_->ListInstances();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].state, InstanceState::kRunning);
  EXPECT_EQ((*listed)[0].tags.at("gpuscaler.io/pool"), "train");
  EXPECT_EQ((*listed)[0].tags.at("gpuscaler.io/intent"), "decision-7/launch-0");
  EXPECT_EQ((*listed)[0].tags.at(kClusterTag), "test-cluster");
  EXPECT_TRUE(std::is_sorted(listed->begin(), listed->end(),
                             [](const Instance& x, const Instance& y) { return x.instance_id < y.instance_id; }));
  const auto emu = emulator_->Instances();
  EXPECT_EQ(emu[0].client_token, AwsProvider::ClientToken("decision-7/launch-0", 0));
}

TEST_F(AwsProviderTest, CapacityErrorsFallBackToOtherZonesAndOnDemand) {
  EmulatorScenario s;
  s.capacity = {{"g5.12xlarge", "us-east-1a", CapacityType::kSpot, 0, "InsufficientInstanceCapacity", {}, {}},
                {"g5.12xlarge", "us-east-1b", CapacityType::kSpot, 1, "InsufficientInstanceCapacity", {}, {}}};
  Boot(s);
  auto r = provider_->Launch(Request({Off("g5.12xlarge", "us-east-1a", CapacityType::kSpot),
                                      Off("g5.12xlarge", "us-east-1b", CapacityType::kSpot),
                                      Off("g5.12xlarge", "us-east-1a", CapacityType::kOnDemand)},
                                     4, "d-1"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 4u);
  std::map<std::string, int> by_key;
  for (const auto& i : r->instances) ++by_key[i.offering.Key()];
  EXPECT_EQ(by_key["g5.12xlarge/us-east-1b/spot"], 1);
  EXPECT_EQ(by_key["g5.12xlarge/us-east-1a/on-demand"], 3);
  ASSERT_EQ(r->errors.size(), 2u);
  EXPECT_EQ(r->errors[0].offering_key, "g5.12xlarge/us-east-1a/spot");
  EXPECT_EQ(r->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_EQ(r->errors[1].offering_key, "g5.12xlarge/us-east-1b/spot");
  EXPECT_EQ(emulator_->stats().create_fleet_calls, 2);  // one spot run, one on-demand run
}

// A gang's launch is one fleet per capacity type with MinTargetCapacity in
// one zone: spot short in every zone gives no spot node, and on-demand then
// gives all of them in one zone.
TEST_F(AwsProviderTest, AnAllOrNothingLaunchNeverLeavesAPartialGang) {
  EmulatorScenario s;
  s.capacity = {{"g5.12xlarge", "us-east-1a", CapacityType::kSpot, 3, "InsufficientInstanceCapacity", {}, {}},
                {"g5.12xlarge", "us-east-1b", CapacityType::kSpot, 3, "InsufficientInstanceCapacity", {}, {}}};
  Boot(s);
  LaunchRequest gang = Request({Off("g5.12xlarge", "us-east-1a", CapacityType::kSpot),
                               Off("g5.12xlarge", "us-east-1b", CapacityType::kSpot),
                               Off("g5.12xlarge", "us-east-1a", CapacityType::kOnDemand)},
                              4, "d-gang");
  gang.all_or_nothing = true;
  auto r = provider_->Launch(gang);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 4u);
  for (const auto& i : r->instances) EXPECT_EQ(i.offering.Key(), "g5.12xlarge/us-east-1a/on-demand");
  EXPECT_EQ(r->errors.size(), 2u) << "both spot zones said why";
  // Spot only: nothing at all.
  gang.offerings.pop_back();
  gang.idempotency_token = "d-gang-2";
  auto none = provider_->Launch(gang);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->instances.empty());
  EXPECT_EQ(none->errors.size(), 2u);
}

// A gang launch of a pool with a placement group: the provider creates the
// cluster placement group once (tagged with the cluster and pool), every
// override names it, and the instances are in it; a second gang reuses it.
TEST_F(AwsProviderTest, AGangLaunchGoesIntoThePoolsClusterPlacementGroupMadeOnce) {
  Boot();
  LaunchRequest gang = Request({Off("p5.48xlarge", "us-east-1a", CapacityType::kOnDemand)}, 2, "d-pg-1");
  gang.all_or_nothing = true;
  gang.placement_group = "train-gangs";
  auto r = provider_->Launch(gang);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 2u);
  for (const auto& i : emulator_->Instances()) EXPECT_EQ(i.placement_group, "train-gangs") << i.instance_id;
  // The provider says so, in the launch's answer and in every listing after.
  for (const Instance& i : r->instances) EXPECT_EQ(i.placement_group, "train-gangs") << i.instance_id;
  auto listed = provider_->ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  for (const Instance& i : *listed) EXPECT_EQ(i.placement_group, "train-gangs") << i.instance_id;

  auto described = client_->Query("ec2", DescribePlacementGroupsQuery({"train-gangs"}));
  ASSERT_TRUE(described.ok()) << described.error().ToString();
  auto groups = ParseDescribePlacementGroups(*described);
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].strategy, "cluster");
  EXPECT_EQ((*groups)[0].tags.at(kClusterTag), "test-cluster");
  EXPECT_EQ((*groups)[0].tags.at(kOwnerTag), "train");

  gang.idempotency_token = "d-pg-2";
  ASSERT_TRUE(provider_->Launch(gang).ok());
  int creates = 0, describes = 0;
  for (const auto& req : emulator_->Requests()) {
    creates += req.action == "CreatePlacementGroup";
    describes += req.action == "DescribePlacementGroups";
  }
  EXPECT_EQ(creates, 1);
  EXPECT_EQ(describes, 2) << "the provider's one look, and this test's";
  EXPECT_EQ(emulator_->Instances().size(), 4u);
  for (const auto& i : emulator_->Instances()) EXPECT_EQ(i.placement_group, "train-gangs");

  // A launch without one (a lone node) is in no placement group.
  ASSERT_TRUE(provider_->Launch(Request({Off("p5.48xlarge", "us-east-1b", CapacityType::kOnDemand)}, 1, "d-lone")).ok());
  EXPECT_EQ(emulator_->Instances().back().placement_group, "");
}

// Sends every CreatePlacementGroup twice: the first makes the group (as
// another replica would, between this provider's look and its create), the
// second gets EC2's InvalidPlacementGroup.Duplicate.
class RacingCreateTransport final : public Transport {
 public:
  explicit RacingCreateTransport(sim::CloudEmulator& emulator) : inner_(emulator) {}
  Result<TransportResponse> Send(const TransportRequest& request) override {
    if (request.body.find("Action=CreatePlacementGroup") != std::string::npos) {
      Result<TransportResponse> first = inner_.Send(request);
      if (!first.ok() || first->status != 200) return first;
    }
    return inner_.Send(request);
  }

 private:
  sim::EmulatorTransport inner_;
};

// A group another replica makes meanwhile is taken as ours:
// CreatePlacementGroup's InvalidPlacementGroup.Duplicate is success. One of
// another strategy is refused before anything launches.
TEST_F(AwsProviderTest, AnExistingPlacementGroupIsUsedAndOneOfAnotherStrategyRefused) {
  Boot();
  RacingCreateTransport racing(*emulator_);
  StaticCredentialsProvider creds(Creds(), "test");
  AwsClient racing_client(emulated::Installation::ClientOptions(), racing, creds, clock_,
                          [](std::chrono::milliseconds) {});
  AwsProvider raced(emulated::ProviderOptions("test-cluster"), racing_client, clock_);
  LaunchRequest gang = Request({Off("p5.48xlarge", "us-east-1a", CapacityType::kOnDemand)}, 2, "d-pg-a");
  gang.all_or_nothing = true;
  gang.placement_group = "train-gangs";
  auto r = raced.Launch(gang);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->instances.size(), 2u);
  std::vector<std::string> codes;
  for (const auto& req : emulator_->Requests()) {
    if (req.action == "CreatePlacementGroup") codes.push_back(req.error_code);
  }
  EXPECT_EQ(codes, (std::vector<std::string>{"", "InvalidPlacementGroup.Duplicate"}));

  gang.idempotency_token = "d-pg-b";
  ASSERT_TRUE(provider_->Launch(gang).ok()) << "the group exists: found, not made again";

  ASSERT_TRUE(client_->Query("ec2", CreatePlacementGroupQuery("spread-out", "spread", {})).ok());
  gang.placement_group = "spread-out";
  gang.idempotency_token = "d-pg-c";
  auto refused = provider_->Launch(gang);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(refused.error().message().find("strategy 'spread'"), std::string::npos) << refused.error().message();
  EXPECT_EQ(emulator_->Instances().size(), 4u) << "nothing launched";
}

TEST_F(AwsProviderTest, NoCapacityAnywhereIsAShortResultNotAnError) {
  EmulatorScenario s;
  s.capacity = {{"p5.48xlarge", "", std::nullopt, 0, "InsufficientInstanceCapacity", {}, {}}};
  Boot(s);
  auto r = provider_->Launch(Request({Off("p5.48xlarge", "us-east-1a", CapacityType::kSpot),
                                      Off("p5.48xlarge", "us-east-1a", CapacityType::kOnDemand)},
                                     1, "d-2"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->instances.empty());
  EXPECT_EQ(r->errors.size(), 2u);
}

TEST_F(AwsProviderTest, ThrottlingBacksOffWithJitterAndConverges) {
  EmulatorScenario s;
  s.throttle_every = 2;
  Boot(s);
  for (int n = 0; n < 4; ++n) {
    auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 1, "t-" + std::to_string(n)));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    ASSERT_EQ(r->instances.size(), 1u);
  }
  EXPECT_EQ(emulator_->Instances().size(), 4u);
  EXPECT_GE(client_->retries(), 2);
  ASSERT_EQ(static_cast<int>(sleeps_.size()), client_->retries());
  for (auto d : sleeps_) EXPECT_LE(d.count(), 1000);  // first backoff after a throttle: ≤ throttle_base
}

TEST_F(AwsProviderTest, PersistentThrottlingGivesUpWithCappedExponentialBackoff) {
  EmulatorScenario s;
  s.throttle_rate = 1.0;
  Boot(s);
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 1, "x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kThrottled);
  EXPECT_NE(r.error().message().find("RequestLimitExceeded"), std::string::npos);
  ASSERT_EQ(sleeps_.size(), 4u);  // 5 attempts
  const int64_t ceilings[] = {1000, 2000, 4000, 8000};
  int64_t total = 0;
  for (size_t i = 0; i < sleeps_.size(); ++i) {
    EXPECT_LE(sleeps_[i].count(), ceilings[i]) << i;
    EXPECT_GE(sleeps_[i].count(), 0);
    total += sleeps_[i].count();
  }
  EXPECT_GT(total, 0);  // jittered, not all zero
  EXPECT_EQ(emulator_->Instances().size(), 0u);

  // The same seed gives the same waits.
  std::vector<std::chrono::milliseconds> first = sleeps_;
  sleeps_.clear();
  Boot(s);
  (void)provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 1, "x"));
  EXPECT_EQ(sleeps_, first);
}

TEST_F(AwsProviderTest, ServerErrorsAreRetriedAsTransient) {
  EmulatorScenario s;
  s.server_error_rate = 1.0;
  Boot(s);
  auto r = provider_->ListInstances();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kTransient);
  EXPECT_EQ(sleeps_.size(), 4u);
  for (size_t i = 0; i < sleeps_.size(); ++i) EXPECT_LE(sleeps_[i].count(), 200 << i);
}

TEST_F(AwsProviderTest, AuthFailuresStopAtOnceAndNeverShowTheSecret) {
  const std::string planted = "PLANTEDsecretKEYthatMustNotLeak0123456789";
  Boot({}, Creds(planted));
  std::vector<std::string> said;
  auto launch = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 1, "a"));
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.error().category(), ErrorCategory::kAuth);
  said.push_back(launch.error().ToString());
  said.push_back(provider_->Terminate({"i-0123456789abcdef0"}).error().ToString());
  said.push_back(provider_->ListInstances().error().ToString());
  said.push_back(provider_->PollInterruptions().error().ToString());
  said.push_back(provider_->SpotPrices(Start()).error().ToString());
  EXPECT_TRUE(sleeps_.empty());  // auth errors are not retried
  for (const std::string& s : said) {
    SCOPED_TRACE(s);
    EXPECT_EQ(s.find("PLANTED"), std::string::npos);
    EXPECT_EQ(s.find("Signature="), std::string::npos);
    EXPECT_NE(s.find("SignatureDoesNotMatch"), std::string::npos);
  }
}

TEST_F(AwsProviderTest, TerminateIsIdempotentAndSkipsUnknownIds) {
  Boot();
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 2, "d"));
  ASSERT_TRUE(r.ok());
  const std::string id = r->instances[0].instance_id;
  ASSERT_TRUE(provider_->Terminate({id, "i-0fffffffffffffff0"}).ok());
  ASSERT_TRUE(provider_->Terminate({id}).ok());
  ASSERT_TRUE(provider_->Terminate({}).ok());
  auto listed = provider_->ListInstances();
  ASSERT_EQ(listed->size(), 2u);  // shutting-down still listed
  clock_.Advance(Seconds(30));
  listed = provider_->ListInstances();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_NE((*listed)[0].instance_id, id);
}

TEST_F(AwsProviderTest, ListInstancesFollowsEveryPage) {
  Boot();
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand)}, 1203, "big"));
  ASSERT_TRUE(r.ok());
  auto listed = provider_->ListInstances();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1203u);
  // One CreateFleet, two pages, one DescribeAutoScalingGroups (the cluster's groups).
  EXPECT_EQ(emulator_->stats().requests, 4);
}

TEST_F(AwsProviderTest, InterruptionWarningsBecomeNoticesOnce) {
  EmulatorScenario s;
  s.interruptions = {{Seconds(60), "g5.xlarge", "", 1, Seconds(120)}};
  Boot(s);
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kSpot)}, 2, "spot"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(provider_->PollInterruptions()->empty());
  clock_.Advance(Seconds(90));
  ASSERT_TRUE(emulator_->Interrupt(r->instances[1].instance_id).ok());
  auto notices = provider_->PollInterruptions();
  ASSERT_TRUE(notices.ok()) << notices.error().ToString();
  ASSERT_EQ(notices->size(), 2u);
  EXPECT_EQ((*notices)[0].instance_id, r->instances[0].instance_id);
  EXPECT_EQ((*notices)[0].notice_time, Start() + Seconds(90));
  EXPECT_EQ((*notices)[0].deadline, Start() + Seconds(210));
  EXPECT_EQ((*notices)[1].instance_id, r->instances[1].instance_id);
  EXPECT_FALSE((*notices)[0].receipt.empty());
  EXPECT_TRUE(provider_->PollInterruptions()->empty());  // hidden while being handled
  ASSERT_TRUE(provider_->AcknowledgeInterruptions(*notices).ok());
  clock_.Advance(Seconds(60));  // past the queue's visibility timeout
  EXPECT_TRUE(provider_->PollInterruptions()->empty());  // acknowledged: gone for good
}

TEST_F(AwsProviderTest, ANoticeNotAcknowledgedComesAgainAfterTheVisibilityTimeout) {
  EmulatorScenario s;
  Boot(s);
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kSpot)}, 1, "spot"));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(emulator_->Interrupt(r->instances[0].instance_id).ok());
  auto first = provider_->PollInterruptions();
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  // The process dies before it records the notice: nothing acknowledged.
  clock_.Advance(s.visibility_timeout + Seconds(1));
  auto again = provider_->PollInterruptions();
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].instance_id, r->instances[0].instance_id);
  EXPECT_EQ((*again)[0].deadline, (*first)[0].deadline);
  EXPECT_NE((*again)[0].receipt, (*first)[0].receipt);  // SQS gives a new handle per receive
}

// Answers the `corrupt_receive`-th SQS ReceiveMessage (1-based) with a body
// that is not JSON; everything else goes to the emulator.
class CorruptingTransport final : public Transport {
 public:
  CorruptingTransport(Transport& inner, int corrupt_receive) : inner_(inner), corrupt_receive_(corrupt_receive) {}
  Result<TransportResponse> Send(const TransportRequest& request) override {
    Result<TransportResponse> response = inner_.Send(request);
    if (response.ok() && HeaderValue(request.headers, "X-Amz-Target") == "AmazonSQS.ReceiveMessage" &&
        ++receives_ == corrupt_receive_)
      response->body = "{\"Messages\": [{\"Body\": ";
    return response;
  }

 private:
  Transport& inner_;
  int corrupt_receive_;
  int receives_ = 0;
};

TEST_F(AwsProviderTest, AReceiveThatCannotBeParsedKeepsTheNoticesReadBeforeIt) {
  Boot();
  auto r = provider_->Launch(Request({Off("g5.xlarge", "us-east-1a", CapacityType::kSpot)}, 12, "spot"));
  ASSERT_TRUE(r.ok());
  for (const Instance& i : r->instances) ASSERT_TRUE(emulator_->Interrupt(i.instance_id).ok());
  sim::EmulatorTransport emulator_transport(*emulator_);
  CorruptingTransport corrupting(emulator_transport, 2);
  AwsClient client(emulated::Installation::ClientOptions(), corrupting, aws_->credentials, clock_,
                   [](std::chrono::milliseconds) {});
  AwsProvider provider(emulated::ProviderOptions("test-cluster"), client, clock_);
  // The first receive brings 10 notices, the second cannot be parsed.
  auto notices = provider.PollInterruptions();
  ASSERT_TRUE(notices.ok()) << notices.error().ToString();
  EXPECT_EQ(notices->size(), 10u);
  ASSERT_TRUE(provider.AcknowledgeInterruptions(*notices).ok());
  // The two the failed receive held come again once hidden no more; none of
  // the ten does.
  clock_.Advance(Seconds(31));
  auto rest = provider_->PollInterruptions();
  ASSERT_TRUE(rest.ok()) << rest.error().ToString();
  EXPECT_EQ(rest->size(), 2u);
}

TEST_F(AwsProviderTest, AFailedFirstReceiveIsAnError) {
  Boot();
  sim::EmulatorTransport emulator_transport(*emulator_);
  CorruptingTransport corrupting(emulator_transport, 1);
  AwsClient client(emulated::Installation::ClientOptions(), corrupting, aws_->credentials, clock_,
                   [](std::chrono::milliseconds) {});
  AwsProvider provider(emulated::ProviderOptions("test-cluster"), client, clock_);
  EXPECT_FALSE(provider.PollInterruptions().ok());
}

TEST_F(AwsProviderTest, SpotPricesKeepThePriceInForceAtTheStartAndTheChangesAfter) {
  EmulatorScenario s;
  s.spot_prices = {{"g5.xlarge", "us-east-1a", 0.38, Start() - Seconds(9000)},
                   {"g5.xlarge", "us-east-1a", 0.40, Start() - Seconds(7200)},
                   {"g5.xlarge", "us-east-1a", 0.42, Start() - Seconds(1800)},
                   {"g5.xlarge", "us-east-1b", 0.39, Start() - Seconds(600)},
                   {"g5.2xlarge", "us-east-1a", 0.55, Start() - Seconds(8000)}};
  Boot(s);
  auto prices = provider_->SpotPrices(Start() - Seconds(3600));
  ASSERT_TRUE(prices.ok());
  // In force an hour ago: 0.40 in 1a (set two hours ago; the 0.38 before it
  // is history) and the 2xlarge's 0.55; then the changes since.
  ASSERT_EQ(prices->size(), 4u);
  EXPECT_DOUBLE_EQ((*prices)[0].usd_per_hour, 0.55);
  EXPECT_EQ((*prices)[0].time, Start() - Seconds(8000));
  EXPECT_DOUBLE_EQ((*prices)[1].usd_per_hour, 0.40);
  EXPECT_DOUBLE_EQ((*prices)[2].usd_per_hour, 0.42);
  EXPECT_EQ((*prices)[3].zone, "us-east-1b");
  EXPECT_EQ((*prices)[3].capacity_type, CapacityType::kSpot);
}

TEST(AwsProviderToken, ClientTokensFitEc2Limits) {
  EXPECT_EQ(AwsProvider::ClientToken("abc", 2), "abc-2");
  const std::string long_token(100, 'x');
  const std::string t = AwsProvider::ClientToken(long_token, 1);
  EXPECT_LE(t.size(), 64u);
  EXPECT_EQ(t, AwsProvider::ClientToken(long_token, 1));
  EXPECT_NE(t, AwsProvider::ClientToken(long_token, 2));
  EXPECT_LE(AwsProvider::ClientToken("naïve token", 0).size(), 64u);
}

}  // namespace
}  // namespace gpuscaler::cloud
