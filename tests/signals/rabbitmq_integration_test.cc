// SignalCollector against a real RabbitMQ 3.10 (management plugin), started
// by the test harness (support/real_servers.h). One server is shared by the
// suite and restarted when a test stopped it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "fakes/fake_clock.h"
#include "gpuscaler/signals/collector.h"
#include "support/real_servers.h"
#include "support/temp_dir.h"

namespace gpuscaler::signals {
namespace {

using gpuscaler::testing::FakeClock;
using gpuscaler::testing::RabbitMqServer;
using gpuscaler::testing::TempDir;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr char kPlantedSecret[] = "planted-secret-rabbit-41c7";

SignalQuery Queue(std::string vhost, std::string queue) {
  return {.source = SignalSource::kRabbitMq, .query = "", .vhost = std::move(vhost), .queue = std::move(queue)};
}

class RabbitMqIntegration : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    if (!server_ || !server_->ok() || server_->value()->stopped()) {
      server_.reset();
      server_ = std::make_unique<Result<std::unique_ptr<RabbitMqServer>>>(gpuscaler::testing::StartRabbitMq());
    }
    GPUSCALER_REQUIRE_REAL_SERVER(*server_);
  }

  RabbitMqServer& server() { return *server_->value(); }

  SignalEndpoints Endpoints(const std::string& password) {
    SignalEndpoints ep;
    ep.rabbitmq.url = server().url();
    ep.rabbitmq.username = RabbitMqServer::kUser;
    ep.rabbitmq.password_file = dir_.Write("password", password + "\n");
    ep.timeout = milliseconds(3000);
    return ep;
  }

  // Collects until the reading is ok with `want` (queue counters appear with
  // the server's statistics tick, 500 ms here) or 15 s pass.
  CollectedSignal CollectUntil(SignalCollector& collector, const SignalQuery& q, double want) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(15);
    while (true) {
      CollectedSignal c = collector.Collect({q})[0];
      if ((c.total.ok() && *c.total.value == want) || steady_clock::now() >= deadline) return c;
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  static std::unique_ptr<Result<std::unique_ptr<RabbitMqServer>>> server_;
  TempDir dir_;
  FakeClock clock_;
};

std::unique_ptr<Result<std::unique_ptr<RabbitMqServer>>> RabbitMqIntegration::server_;

TEST_F(RabbitMqIntegration, ReadsTheDepthOfAQueueAfterMessagesArePublished) {
  ASSERT_TRUE(server().DeclareQueue("/", "celery").ok());
  SignalCollector collector(Endpoints(RabbitMqServer::kPassword), clock_);
  CollectedSignal empty = CollectUntil(collector, Queue("/", "celery"), 0);
  ASSERT_TRUE(empty.total.ok()) << empty.total.error;
  EXPECT_EQ(*empty.total.value, 0);

  Status published = server().Publish("/", "celery", 7);
  ASSERT_TRUE(published.ok()) << published.error().ToString();
  CollectedSignal c = CollectUntil(collector, Queue("/", "celery"), 7);
  ASSERT_TRUE(c.total.ok()) << c.total.error;
  EXPECT_EQ(*c.total.value, 7);
  EXPECT_EQ(c.total.source, "rabbitmq");
  EXPECT_EQ(c.total.key, "//celery");
  EXPECT_EQ(c.total.observed_at, clock_.WallNow());
  EXPECT_FALSE(c.error.has_value());
}

TEST_F(RabbitMqIntegration, AWrongPasswordIsAnAuthErrorThatNeverShowsThePassword) {
  SignalCollector collector(Endpoints(kPlantedSecret), clock_);
  CollectedSignal c = collector.Collect({Queue("/", "celery")})[0];
  EXPECT_EQ(c.total.state, SignalState::kMissing);
  EXPECT_FALSE(c.total.value.has_value());
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(c.error->category(), ErrorCategory::kAuth) << c.error->ToString();
  EXPECT_NE(c.total.error.find("401"), std::string::npos) << c.total.error;
  const std::string encoded = net::BasicAuthorization(RabbitMqServer::kUser, kPlantedSecret).substr(6);
  for (const std::string& text : {c.total.error, c.error->message(), c.error->ToString(), c.total.key}) {
    EXPECT_EQ(text.find(kPlantedSecret), std::string::npos) << text;
    EXPECT_EQ(text.find(encoded), std::string::npos) << text;
  }
}

TEST_F(RabbitMqIntegration, ReadsAQueueInAVhostWhoseNameNeedsEncoding) {
  const std::string vhost = "team a/gpu%prod";
  const std::string queue = "inference jobs#1";
  Status s = server().AddVhost(vhost);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  s = server().DeclareQueue(vhost, queue);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  s = server().Publish(vhost, queue, 3);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  SignalCollector collector(Endpoints(RabbitMqServer::kPassword), clock_);
  CollectedSignal c = CollectUntil(collector, Queue(vhost, queue), 3);
  ASSERT_TRUE(c.total.ok()) << c.total.error;
  EXPECT_EQ(*c.total.value, 3);
  EXPECT_EQ(c.total.key, vhost + "/" + queue);
}

TEST_F(RabbitMqIntegration, AQueueThatDoesNotExistIsNotFound) {
  SignalCollector collector(Endpoints(RabbitMqServer::kPassword), clock_);
  CollectedSignal c = collector.Collect({Queue("/", "no-such-queue")})[0];
  EXPECT_EQ(c.total.state, SignalState::kMissing);
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(c.error->category(), ErrorCategory::kNotFound) << c.error->ToString();
}

// Last in the file: it stops the shared server (a later test restarts it).
TEST_F(RabbitMqIntegration, AServerStoppedMidTestGivesAMissingTransientReadingNeverZero) {
  ASSERT_TRUE(server().DeclareQueue("/", "outage").ok());
  ASSERT_TRUE(server().Publish("/", "outage", 2).ok());
  SignalCollector collector(Endpoints(RabbitMqServer::kPassword), clock_);
  CollectedSignal before = CollectUntil(collector, Queue("/", "outage"), 2);
  ASSERT_TRUE(before.total.ok()) << before.total.error;

  server().Stop();
  const auto start = steady_clock::now();
  CollectedSignal after = collector.Collect({Queue("/", "outage")})[0];
  EXPECT_LT(steady_clock::now() - start, milliseconds(3500));
  EXPECT_EQ(after.total.state, SignalState::kMissing);
  EXPECT_FALSE(after.total.value.has_value());
  EXPECT_FALSE(after.total.UsableValue().has_value());
  ASSERT_TRUE(after.error.has_value());
  EXPECT_EQ(after.error->category(), ErrorCategory::kTransient) << after.error->ToString();
  EXPECT_NE(after.total.error.find("127.0.0.1:" + std::to_string(server().port())), std::string::npos)
      << after.total.error;
}

}  // namespace
}  // namespace gpuscaler::signals
