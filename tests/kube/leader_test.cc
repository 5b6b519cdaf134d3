// Leader election against the fake API server's Lease (optimistic
// concurrency on resourceVersion). Time moves only through a manual clock:
// each elector gets its own, so "local clocks" really are local.
#include "gpuscaler/kube/leader.h"

#include <gtest/gtest.h>

#include <utility>

#include "../fakes/fake_clock.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FakeApiServer;
using testing::FakeClock;

LeaderElectionOptions Options(const std::string& id) {
  LeaderElectionOptions o;
  o.identity = id;
  return o;  // 15 s lease, 10 s renew deadline, 2 s retry: client-go's defaults
}

json LeaseOnServer(const FakeApiServer& server) {
  return *server.Get("leases", "gpuscaler/gpuscaler");
}

TEST(ValidateLeaderElection, FollowsClientGosRules) {
  EXPECT_TRUE(ValidateLeaderElection(Options("a")).ok());
  LeaderElectionOptions o = Options("a");
  o.renew_deadline = o.lease_duration;
  EXPECT_FALSE(ValidateLeaderElection(o).ok());
  o = Options("a");
  o.retry_period = milliseconds(9000);  // 1.2 x 9 s > 10 s
  EXPECT_FALSE(ValidateLeaderElection(o).ok());
  EXPECT_FALSE(ValidateLeaderElection(Options("")).ok());
}

class LeaderTest : public ::testing::Test {
 protected:
  FakeApiServer server_;
  ApiClient client_{testing::FakeClusterConfig(server_)};
  FakeClock clock_a_, clock_b_;
  LeaderElector a_{client_, clock_a_, Options("replica-a")};
  LeaderElector b_{client_, clock_b_, Options("replica-b")};

  // Both try once per retry period, A first, as two replicas would.
  void Round(Seconds step = Seconds(2)) {
    clock_a_.Advance(step);
    clock_b_.Advance(step);
    a_.TryAcquireOrRenew();
    b_.TryAcquireOrRenew();
  }
};

TEST_F(LeaderTest, TheFirstCreatesTheLeaseAndTheOtherStaysACandidate) {
  EXPECT_TRUE(a_.TryAcquireOrRenew());
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  EXPECT_TRUE(a_.IsLeader());
  EXPECT_FALSE(b_.IsLeader());
  json lease = LeaseOnServer(server_);
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  EXPECT_EQ(server_.Count("POST", "/apis/coordination.k8s.io/v1/namespaces/gpuscaler/leases"), 1);
  // Renewals keep acquireTime and move renewTime.
  const std::string acquired = lease["spec"]["acquireTime"];
  for (int i = 0; i < 10; ++i) {
    Round();
    ASSERT_TRUE(a_.IsLeader()) << "round " << i;
    ASSERT_FALSE(b_.IsLeader()) << "round " << i;
  }
  lease = LeaseOnServer(server_);
  EXPECT_EQ(lease["spec"]["acquireTime"], acquired);
  EXPECT_NE(lease["spec"]["renewTime"], acquired);
}

TEST_F(LeaderTest, WhenTheLeaderStopsRenewingTheOtherTakesOverWithinTheLeaseDuration) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  for (int i = 0; i < 3; ++i) Round();
  ASSERT_TRUE(a_.IsLeader());
  // A stops renewing (hung, partitioned): only B keeps trying.
  Seconds since_last_renewal{0};
  bool took_over = false;
  while (since_last_renewal <= Seconds(40)) {
    clock_a_.Advance(Seconds(2));
    clock_b_.Advance(Seconds(2));
    since_last_renewal += Seconds(2);
    took_over = b_.TryAcquireOrRenew();
    // Never two leaders: A gives up at its renew deadline, B takes over only
    // after a full lease duration without change.
    ASSERT_FALSE(a_.IsLeader() && b_.IsLeader()) << since_last_renewal.count() << " s";
    if (took_over) break;
  }
  ASSERT_TRUE(took_over);
  EXPECT_GE(since_last_renewal, Seconds(15));
  EXPECT_LE(since_last_renewal, Seconds(15) + Seconds(2));  // one retry period of slack
  EXPECT_FALSE(a_.IsLeader());  // past its renew deadline
  json lease = LeaseOnServer(server_);
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  // A comes back: it sees B's renewals and stays a candidate.
  for (int i = 0; i < 10; ++i) {
    Round();
    ASSERT_TRUE(b_.IsLeader());
    ASSERT_FALSE(a_.IsLeader());
  }
}

// A replica's clock as its thread reads it when the process is stopped
// (SIGSTOP) right after one reading (steady or wall): that reading is from
// before the stop, every later one from after it.
class StoppedAfterAReading final : public Clock {
 public:
  explicit StoppedAfterAReading(FakeClock& base) : base_(base) {}
  // The next reading is the last before a stop of `d`.
  void StopAfterNextReading(Seconds d) { stop_for_ = d; }
  SteadyTime Now() const override {
    const SteadyTime t = base_.Now();
    Stop();
    return t;
  }
  WallTime WallNow() const override {
    const WallTime t = base_.WallNow();
    Stop();
    return t;
  }

 private:
  void Stop() const {
    if (stop_for_.count() > 0) base_.Advance(std::exchange(stop_for_, Seconds(0)));
  }
  FakeClock& base_;
  mutable Seconds stop_for_{0};
};

// A stopped between reading its clock and the Lease's answer (the window of
// every try) wakes to find B's Lease, renewed a moment ago. That record is
// new to A as of its answer, not as of the clock reading from before the
// stop: one retry later it is 2 s old, not 22, and A stays a candidate.
TEST_F(LeaderTest, AReplicaStoppedInTheMiddleOfATryDatesWhatItReadsFromWhenItWoke) {
  StoppedAfterAReading stopped_clock(clock_a_);
  LeaderElector a(client_, stopped_clock, Options("replica-a"));
  ASSERT_TRUE(a.TryAcquireOrRenew());
  ASSERT_FALSE(b_.TryAcquireOrRenew());
  // A stops for 20 s right after its next try reads the clock; meanwhile B
  // takes the unrenewed Lease over and renews it.
  stopped_clock.StopAfterNextReading(Seconds(20));
  clock_b_.Advance(Seconds(16));
  ASSERT_TRUE(b_.TryAcquireOrRenew());
  clock_b_.Advance(Seconds(2));
  ASSERT_TRUE(b_.TryAcquireOrRenew());
  EXPECT_FALSE(a.TryAcquireOrRenew());  // the try it was stopped in
  // One retry period later, before B's next renewal.
  clock_a_.Advance(Seconds(2));
  EXPECT_FALSE(a.TryAcquireOrRenew()) << "took over a Lease renewed 2 s ago";
  EXPECT_FALSE(a.IsLeader());
  EXPECT_TRUE(b_.IsLeader());
  const json lease = LeaseOnServer(server_);
  EXPECT_EQ(lease["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
}

// gpuscaler_leaderless_seconds: a Lease nobody renews is leaderless from
// the end of its holder's leaseDurationSeconds, as each replica sees it on
// its own clock, and live again once a replica takes it over.
TEST_F(LeaderTest, LeaderlessTimeCountsFromTheUnrenewedLeasesExpiry) {
  using std::chrono::milliseconds;
  EXPECT_EQ(a_.LeaderlessFor(), milliseconds(0));  // not looked yet
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  ASSERT_FALSE(b_.TryAcquireOrRenew());
  EXPECT_EQ(a_.LeaderlessFor(), milliseconds(0));
  EXPECT_EQ(b_.LeaderlessFor(), milliseconds(0));
  // A hangs and renews no more. Past its renew deadline it stops leading,
  // but its Lease still lives until the 15 s lease duration.
  clock_a_.Advance(Seconds(12));
  EXPECT_FALSE(a_.IsLeader());
  EXPECT_EQ(a_.LeaderlessFor(), milliseconds(0));
  clock_a_.Advance(Seconds(8));
  EXPECT_EQ(a_.LeaderlessFor(), milliseconds(5000));
  clock_b_.Advance(Seconds(20));
  EXPECT_EQ(b_.LeaderlessFor(), milliseconds(5000));
  ASSERT_TRUE(b_.TryAcquireOrRenew());
  EXPECT_EQ(b_.LeaderlessFor(), milliseconds(0));
  EXPECT_EQ(b_.transitions_seen(), 1);
  EXPECT_FALSE(a_.TryAcquireOrRenew());  // A sees B's record: a live holder
  EXPECT_EQ(a_.LeaderlessFor(), milliseconds(0));
}

TEST_F(LeaderTest, ALeaderThatCannotRenewStopsLeadingAtItsRenewDeadline) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  server_.SetLeaseOutage(true);
  clock_a_.Advance(Seconds(8));
  a_.TryAcquireOrRenew();  // the GET fails: not renewed
  EXPECT_TRUE(a_.IsLeader());  // 8 s < 10 s renew deadline
  EXPECT_FALSE(a_.last_error().empty());
  clock_a_.Advance(Seconds(2));
  // No request needed: IsLeader() reads the clock.
  EXPECT_FALSE(a_.IsLeader());
}

TEST_F(LeaderTest, AConflictingWriteLosesWithA409AndTheWinnerLeads) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  // B has watched the lease long enough to consider it expired...
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  clock_b_.Advance(Seconds(16));
  // ...but A renews between B's read and B's write: B's update carries the
  // old resourceVersion. Simulated by renewing A first with B's stale view.
  json stale = LeaseOnServer(server_);
  clock_a_.Advance(Seconds(2));
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  ApiClient raw(testing::FakeClusterConfig(server_));
  stale["spec"]["holderIdentity"] = "replica-b";
  Result<ApiResponse> r = raw.Call("PUT", "/apis/coordination.k8s.io/v1/namespaces/gpuscaler/leases/gpuscaler", stale.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(LeaseOnServer(server_)["spec"]["holderIdentity"], "replica-a");
  // B's own try now sees the changed record and backs off.
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  EXPECT_TRUE(a_.IsLeader());
}

TEST_F(LeaderTest, ReleasingHandsTheLeaseOverAtOnce) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  a_.Stop(/*release=*/true);
  EXPECT_FALSE(a_.IsLeader());
  EXPECT_EQ(LeaseOnServer(server_)["spec"]["holderIdentity"], "");
  EXPECT_TRUE(b_.TryAcquireOrRenew());  // no lease duration to wait
  // A new term, though the Lease had no holder: the count orders terms.
  EXPECT_EQ(LeaseOnServer(server_)["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(b_.transitions_seen(), 1);
}

// Two electors on their own threads and the system clock, with short
// durations: exactly one leads; when it stops renewing (not releasing), the
// other leads within the lease duration (plus a retry period and slack for
// a loaded machine).
TEST(LeaderElectorThreads, ExactlyOneLeadsAndTheOtherTakesOverWhenItStops) {
  FakeApiServer server;
  ApiClient client(testing::FakeClusterConfig(server), milliseconds(2000));
  SystemClock clock;
  auto options = [](const std::string& id) {
    LeaderElectionOptions o;
    o.identity = id;
    o.lease_duration = milliseconds(3000);
    o.renew_deadline = milliseconds(2000);
    o.retry_period = milliseconds(200);
    return o;
  };
  std::mutex mu;
  std::condition_variable cv;
  int changes = 0;
  auto notify = [&](bool) {
    std::lock_guard<std::mutex> lock(mu);
    ++changes;
    cv.notify_all();
  };
  LeaderElector a(client, clock, options("a"), notify);
  LeaderElector b(client, clock, options("b"), notify);
  a.Start();
  b.Start();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return changes >= 1; }));
  }
  LeaderElector& first = a.IsLeader() ? a : b;
  LeaderElector& second = a.IsLeader() ? b : a;
  ASSERT_TRUE(first.IsLeader());
  ASSERT_FALSE(second.IsLeader());
  const auto stopped = std::chrono::steady_clock::now();
  first.Stop(/*release=*/false);
  EXPECT_FALSE(first.IsLeader());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return second.IsLeader(); }));
  }
  const auto took = std::chrono::steady_clock::now() - stopped;
  // Not at once (the lease was not released: it must run out on the
  // second's clock; the bound is loose for a slow last renewal)...
  EXPECT_GE(took, milliseconds(1500));
  // ...and not much later (a generous bound for a loaded 2-core machine).
  EXPECT_LE(took, milliseconds(3000 + 200 * 2 + 3000));
  EXPECT_EQ((*server.Get("leases", "gpuscaler/gpuscaler"))["spec"]["holderIdentity"], second.identity());
  second.Stop();
}

}  // namespace
}  // namespace gpuscaler::kube
