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
  EXPECT_TRUE(provider_->PollInterruptions()->empty());  // deleted from the queue
}

TEST_F(AwsProviderTest, SpotPricesSinceAscending) {
  EmulatorScenario s;
  s.spot_prices = {{"g5.xlarge", "us-east-1a", 0.40, Start() - Seconds(7200)},
                   {"g5.xlarge", "us-east-1a", 0.42, Start() - Seconds(1800)},
                   {"g5.xlarge", "us-east-1b", 0.39, Start() - Seconds(600)}};
  Boot(s);
  auto prices = provider_->SpotPrices(Start() - Seconds(3600));
  ASSERT_TRUE(prices.ok());
  ASSERT_EQ(prices->size(), 2u);
  EXPECT_DOUBLE_EQ((*prices)[0].usd_per_hour, 0.42);
  EXPECT_EQ((*prices)[1].zone, "us-east-1b");
  EXPECT_EQ((*prices)[1].capacity_type, CapacityType::kSpot);
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
