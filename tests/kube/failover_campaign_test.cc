// The failover campaign: two `gpuscaler run` processes with leader election
// against this test's fake Kubernetes API server, the AWS provider against
// `gpuscaler cloud-emulator`, and one audit store in a real PostgreSQL
// (the shared store of the high-availability overlay). The demand changes
// every run, and the leader is taken out at a random point:
//  - SIGKILL at a random failpoint of the actuation path (armed when the
//    replica started, reached once it leads: between a launch's intent and
//    its outcome, around a termination, at the tick's commit);
//  - SIGKILL after a random time of leading;
//  - SIGSTOP (a long pause): the other replica takes over; the paused one
//    is then continued and must write nothing (fencing) and act on nothing,
//    and the successor must lead on: 40 more ticks (longer than a lease)
//    with the Lease still its own and the continued one standing by.
// The killed replica is started again at once, as a candidate beside the
// standby (either may take over after a kill; after a pause only the
// standby can). A replica started again may be armed with a failpoint; one
// that dies at it as it takes over or right after (a second failure the
// harness chose) is started again unarmed, and the run's checks go on with
// whoever leads then. After every run the
// invariants that must hold at every instant are checked (no instance
// without a durable intent, none launched twice, decisions' leadership terms
// never going back); at the end the leader settles the fleet and
// everything is checked. It prints
//   failover campaign: runs=N duplicate_launches=0 untracked_instances=0 lost_audit_rows=0 fenced_writes=0
//   takeover_ms p50=… max=…
// (figures in bench/RESULTS.md, method in docs/reliability.md).
//
// GPUSCALER_FAILOVER_RUNS (default 12; the figure is a run of 100 or more)
// and GPUSCALER_FAILOVER_SEED (default 1) change the campaign;
// GPUSCALER_FAILOVER_LOG_LEVEL (e.g. debug) is the replicas' --log-level,
// and GPUSCALER_FAILOVER_KEEP_LOGS=DIR keeps every replica's logs of a
// failed campaign in DIR/seed<N>.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "cli/daemon_ticks.h"
#include "cloud/daemon_harness.h"
#include "gpuscaler/controller/failpoint.h"
#include "kube/fake_api_server.h"
#include "store/backends.h"

namespace gpuscaler::testing::failover_campaign {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kTickMs = 100;
constexpr int kJobsPerNode = 5;  // PolicyYaml: 5 queued jobs per one-GPU node

struct Replica {
  std::filesystem::path dir;
  std::unique_ptr<ChildProcess> process;
  int starts = 0;
  std::string failpoint;  // armed at its last start

  uint16_t Port() const { return WaitForPortFile(dir / "daemon.port", 30s); }
  std::filesystem::path Log() const { return dir / ("daemon" + std::to_string(starts - 1) + ".err"); }
  // The replica's /api/v1/status; null when it does not answer.
  json Status() const {
    const uint16_t port = Port();
    if (port == 0) return nullptr;
    const HttpReply r = HttpGet(port, "/api/v1/status");
    if (r.status != 200) return nullptr;
    return json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  }
  bool Leading() const {
    const json s = Status();
    return s.is_object() && s.value("leader", false);
  }
  int64_t Ticks() const {
    const json s = Status();
    return s.is_object() ? s.value("ticks", int64_t{0}) : 0;
  }
};

class FailoverCampaign : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    emulator_ = std::make_unique<EmulatorProcess>(
        dir_, "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\nterminate_latency: 1s\nterminated_visible: 24h\n");
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
    db_ = databases_.Get("failover");
    std::string policy = PolicyYaml("[spot, on-demand]", true);
    // Nodes never register here (no kubelets): keep them.
    const std::string pool_line = "    max_nodes: 20\n";
    policy.replace(policy.find(pool_line), pool_line.size(), pool_line + "    registration_timeout: 24h\n");
    for (int i = 0; i < 2; ++i) {
      Replica& r = replicas_[i];
      r.dir = dir_ / (i == 0 ? "a" : "b");
      std::filesystem::create_directories(r.dir);
      WriteIn(r.dir, "policy.yaml", policy);
      WriteIn(r.dir, "kubeconfig",
              "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
              "clusters: [{name: fake, cluster: {server: '" +
                  api_.url() +
                  "'}}]\nusers: [{name: u, user: {token: t0ken}}]\n"
                  "contexts: [{name: test, context: {cluster: fake, user: u, namespace: gpuscaler}}]\n");
      std::string config = DaemonConfigYaml(emulator_->url(), prometheus_.url());
      const std::string db_line = "db: audit.db\n";
      config.replace(config.find(db_line), db_line.size(), "db: \"" + db_ + "\"\n");
      config +=
          "kubernetes:\n  enabled: true\n  kubeconfig: kubeconfig\n"
          "  leader_election: {enabled: true, lease_duration: 3s, renew_deadline: 2s, retry_period: 1s}\n";
      WriteIn(r.dir, "gpuscaler.yaml", config);
    }
  }

  void TearDown() override {
    for (Replica& r : replicas_) {
      if (r.process) {
        r.process->Signal(SIGCONT);
        r.process->Signal(SIGKILL);
        r.process->Wait(30s);
      }
    }
    // Every start's log of both replicas, for reading a failure whole.
    if (const char* keep = std::getenv("GPUSCALER_FAILOVER_KEEP_LOGS");
        keep != nullptr && *keep != '\0' && HasFailure()) {
      std::error_code ec;
      const std::filesystem::path to = std::filesystem::path(keep) / ("seed" + std::to_string(seed_));
      std::filesystem::create_directories(to, ec);
      for (const char* name : {"a", "b"}) {
        std::filesystem::copy(
            dir_ / name, to / name,
            std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing, ec);
      }
      std::printf("failover campaign: logs kept in %s\n", to.c_str());
    }
    CliTest::TearDown();
  }

  // The replica's gpuscaler_store_commit_errors_total, all causes; -1 when
  // it does not answer.
  static double StoreCommitErrors(const Replica& r) {
    const uint16_t port = r.Port();
    if (port == 0) return -1;
    const HttpReply reply = HttpGet(port, "/metrics");
    if (reply.status != 200) return -1;
    double errors = 0;
    std::istringstream lines(reply.body);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("gpuscaler_store_commit_errors_total", 0) == 0)
        errors += std::stod(line.substr(line.rfind(' ')));
    }
    return errors;
  }

  // The Lease's leaseTransitions (-1 before there is a Lease): one more at
  // every change of holder.
  int64_t LeaseTransitions() const {
    const std::optional<json> lease = api_.Get("leases", "gpuscaler/gpuscaler");
    if (!lease) return -1;
    return lease->value("spec", json::object()).value("leaseTransitions", int64_t{-1});
  }

  static void WriteIn(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
  }

  void Start(Replica& r, const std::string& failpoint) {
    r.failpoint = failpoint;
    r.process = StartDaemon(r.dir, kTickMs, failpoint, r.starts++, log_level_);
    ASSERT_TRUE(r.process->started());
    ASSERT_FALSE(WaitUntilServing(*r.process, r.dir).has_value()) << ReadAll(r.Log());
  }

  // The replica that leads and has ticked, within `within`; -1 if none.
  int WaitForLeader(std::chrono::milliseconds within) {
    int leader = -1;
    Eventually(
        [&] {
          for (int i = 0; i < 2; ++i) {
            if (replicas_[i].process && replicas_[i].Leading() && replicas_[i].Ticks() > 0) leader = i;
          }
          return leader >= 0;
        },
        within);
    return leader;
  }

  // Decisions whose leadership term is below one recorded before them: a
  // write by a replica that had lost the Lease (fencing failed).
  int FencedWrites(std::string* detail) {
    Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db_);
    if (!reader) {
      *detail = reader.error().ToString();
      return -1;
    }
    int found = 0;
    int64_t highest = 0;
    for (int64_t after = 0;;) {
      Result<std::vector<std::pair<int64_t, int64_t>>> page = (*reader)->DecisionTerms(after, 500);
      if (!page || page->empty()) break;
      for (const auto& [id, term] : *page) {
        after = id;
        if (term < highest) {
          ++found;
          *detail += "decision " + std::to_string(id) + " term " + std::to_string(term) + " after term " +
                     std::to_string(highest) + "\n";
        }
        if (term == 0) {
          ++found;
          *detail += "decision " + std::to_string(id) + " made under no claimed term\n";
        }
        highest = std::max(highest, term);
      }
    }
    return found;
  }

  // The database's sessions and what they wait for (for a failure's message).
  std::string DatabaseActivity() const {
    PGconn* conn = PQconnectdb(db_.c_str());
    std::string out = "database sessions:\n";
    if (PQstatus(conn) == CONNECTION_OK) {
      PGresult* r = PQexec(conn,
                           "SELECT pid, application_name, state, wait_event_type, wait_event, "
                           "left(query, 120) FROM pg_stat_activity WHERE datname = current_database()");
      for (int i = 0; i < PQntuples(r); ++i) {
        for (int c = 0; c < PQnfields(r); ++c) out += std::string(PQgetvalue(r, i, c)) + " | ";
        out += "\n";
      }
      PQclear(r);
    }
    PQfinish(conn);
    return out;
  }

  // GPUSCALER_FAILOVER_LOG_LEVEL: the replicas' --log-level (e.g. debug).
  const char* log_level_env_ = std::getenv("GPUSCALER_FAILOVER_LOG_LEVEL");
  std::string log_level_ = log_level_env_ != nullptr ? log_level_env_ : "";
  uint64_t seed_ = 1;
  testing_store::TestDatabases databases_{testing_store::Backend::kPostgres};
  FakeApiServer api_;
  QueueDepthServer prometheus_{0};
  std::unique_ptr<EmulatorProcess> emulator_;
  std::string db_;
  Replica replicas_[2];
};

TEST_F(FailoverCampaign, KilledOrPausedLeadersNeverDuplicateLoseOrWriteAfterTheirTerm) {
  const int runs = EnvInt("GPUSCALER_FAILOVER_RUNS", 12);
  const uint64_t seed = static_cast<uint64_t>(EnvInt("GPUSCALER_FAILOVER_SEED", 1));
  seed_ = seed;
  std::mt19937_64 rng(seed);
  std::printf("failover campaign: seed=%llu runs=%d store=%s\n", static_cast<unsigned long long>(seed), runs,
              RedactDatabaseUrl(db_).c_str());
  const std::vector<std::string>& points = failpoint::Names();
  Start(replicas_[0], "");
  ASSERT_GE(WaitForLeader(60s), 0) << ReadAll(replicas_[0].Log());
  Start(replicas_[1], "");

  std::vector<int64_t> takeover_ms;
  int failpoint_kills = 0, timer_kills = 0, pauses = 0, fenced = 0, restarted_took_over = 0;
  int target = 0;
  for (int run = 1; run <= runs; ++run) {
    const int leader = WaitForLeader(60s);
    ASSERT_GE(leader, 0) << "run " << run << ": no leader\n"
                         << ReadAll(replicas_[0].Log()) << ReadAll(replicas_[1].Log());
    Replica& old = replicas_[leader];
    Replica& next = replicas_[1 - leader];
    const int previous = target;
    while (target == previous) target = static_cast<int>(rng() % 6);
    prometheus_.Set(target * kJobsPerNode);
    const int64_t next_ticks = next.Ticks();
    const int mode = static_cast<int>(rng() % 3);  // 0 failpoint/timer kill, 1 timer kill, 2 pause
    Clock::time_point out;
    if (mode == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 1500));  // a random point of its ticks
      out = Clock::now();
      old.process->Signal(SIGSTOP);
      ++pauses;
    } else {
      // A failpoint armed at its start, if any, may end it first.
      const auto leading_for = std::chrono::milliseconds(200 + rng() % 2000);
      std::optional<int> code = old.process->Wait(leading_for);
      out = Clock::now();
      if (code) {
        EXPECT_EQ(*code, 128 + SIGKILL) << "run " << run << ": exited " << *code << "\n"
                                        << ReadAll(old.Log());
        ++failpoint_kills;
      } else {
        old.process->Signal(SIGKILL);
        old.process->Wait(30s);
        ++timer_kills;
      }
    }
    if (mode != 2) {
      // Started again at once, as a standby, armed half the time.
      std::string point;
      if (rng() % 2 == 0) point = points[rng() % points.size()] + ":" + std::to_string(1 + rng() % 2);
      Start(old, point);
    }
    // The first tick of a new leader: the standby's, or, when it dies at its
    // own failpoint as it takes over (a second failure, timed from then),
    // the other's. A replica that dies meanwhile is started again unarmed.
    int64_t baseline[2] = {next_ticks, mode == 2 ? 0 : old.Ticks()};
    Replica* order[2] = {&next, &old};
    bool standby_died = false;
    int led = -1;
    const auto wait_until = Clock::now() + 60s;
    while (led < 0 && Clock::now() < wait_until) {
      for (int k = 0; k < 2 && led < 0; ++k) {
        Replica& r = *order[k];
        if (mode == 2 && &r == &old) continue;  // stopped
        if (std::optional<int> code = r.process->Wait(0ms)) {
          EXPECT_EQ(*code, 128 + SIGKILL) << "run " << run << ": exited " << *code << "\n"
                                          << ReadAll(r.Log());
          ++failpoint_kills;
          out = Clock::now();
          Start(r, "");
          baseline[k] = 0;
          standby_died = standby_died || k == 0;
          continue;
        }
        const json status = r.Status();
        if (status.is_object() && status.value("leader", false) &&
            status.value("ticks", int64_t{0}) > baseline[k])
          led = k;
      }
      if (led < 0) std::this_thread::sleep_for(20ms);
    }
    ASSERT_GE(led, 0) << "run " << run << ": no replica took over\n"
                      << DatabaseActivity() << ReadAll(next.Log()) << ReadAll(old.Log());
    takeover_ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - out).count());
    // After a pause the standby is the only candidate and must take over.
    // After a kill either may: the one started again is a candidate too, and
    // wins when its first look at the Lease plus a lease duration comes
    // before the standby's next try (client-go's rules give neither
    // precedence).
    ASSERT_TRUE(mode != 2 || led == 0) << "run " << run << ": the paused replica led";
    if (mode != 2 && led == 1 && !standby_died) ++restarted_took_over;
    Replica& successor = *order[led];
    Replica& other = *order[1 - led];
    const int64_t transitions = LeaseTransitions();
    // A paused leader wakes past its term: it must find the Lease gone and
    // write nothing under its old term (FencedWrites below).
    if (mode == 2) old.process->Signal(SIGCONT);
    // The successor leads on: it ticks on and the Lease stays its own. After
    // a pause for longer than a lease (40 ticks of 100 ms): a successor that
    // stalled once the paused one went on would be seen losing the Lease.
    const int64_t ticks_then = successor.Ticks();
    const int64_t more = mode == 2 ? 40 : 5;
    int64_t transitions_now = transitions;
    std::optional<int> successor_exit;
    const bool led_on = Eventually(
        [&] {
          if ((successor_exit = successor.process->Wait(0ms))) return true;
          transitions_now = LeaseTransitions();
          if (transitions_now != transitions) return true;
          const json st = successor.Status();
          return st.is_object() && st.value("leader", false) &&
                 st.value("ticks", int64_t{0}) >= ticks_then + more;
        },
        60s);
    if (successor_exit) {
      // Its own failpoint, armed at its start, ended it (the harness's kill).
      EXPECT_EQ(*successor_exit, 128 + SIGKILL) << "run " << run << ": exited " << *successor_exit << "\n"
                                                << ReadAll(successor.Log());
      EXPECT_FALSE(successor.failpoint.empty()) << "run " << run << ": the successor died unarmed\n"
                                                << ReadAll(successor.Log());
      ++failpoint_kills;
      std::printf(
          "failover campaign: run %d (%s): the successor died at its armed failpoint %s after taking over; "
          "started again unarmed\n",
          run, mode == 2 ? "pause" : "kill", successor.failpoint.c_str());
      Start(successor, "");
    }
    ASSERT_TRUE(successor_exit || (led_on && transitions_now == transitions && !other.Leading()))
        << "run " << run << " (" << (mode == 2 ? "pause" : "kill")
        << "): the successor did not lead on (Lease transitions " << transitions << " then "
        << transitions_now << ", ticks " << ticks_then << " then " << successor.Ticks() << ")\n"
        << DatabaseActivity() << "successor:\n"
        << ReadAll(successor.Log()) << "other:\n"
        << ReadAll(other.Log());
    std::string error;
    std::optional<std::vector<CloudInstance>> cloud = emulator_->Instances(&error);
    ASSERT_TRUE(cloud.has_value()) << error;
    const CrashAudit now = AuditCloudAgainstStore(*cloud, db_, /*settled=*/false);
    ASSERT_EQ(now.duplicate_launches + now.lost_audit_rows, 0) << "run " << run << ": " << now.Summary();
    std::string detail;
    fenced = FencedWrites(&detail);
    ASSERT_EQ(fenced, 0) << "run " << run << ":\n" << detail;
  }

  // The leader settles the fleet on a final demand.
  const int final_nodes = 2;
  prometheus_.Set(final_nodes * kJobsPerNode);
  const int leader = WaitForLeader(60s);
  ASSERT_GE(leader, 0);
  auto settled = [&] {
    if (emulator_->LiveCount() != final_nodes) return false;
    Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db_);
    if (!reader) return false;
    Result<std::vector<ActionRow>> open = (*reader)->OpenIntents();
    return open.ok() && open->empty();
  };
  ASSERT_TRUE(Eventually(settled, 120s)) << ReadAll(replicas_[leader].Log());
  std::optional<std::vector<CloudInstance>> cloud = emulator_->Instances();
  ASSERT_TRUE(cloud.has_value());
  const CrashAudit audit = AuditCloudAgainstStore(*cloud, db_, /*settled=*/true);
  std::string detail;
  fenced = FencedWrites(&detail);
  std::sort(takeover_ms.begin(), takeover_ms.end());
  const int64_t p50 = takeover_ms.empty() ? 0 : takeover_ms[takeover_ms.size() / 2];
  const int64_t max = takeover_ms.empty() ? 0 : takeover_ms.back();
  int launched = 0;
  for (const CloudInstance& i : *cloud) launched += i.ours() ? 1 : 0;
  std::printf(
      "failover campaign: runs=%d duplicate_launches=%d untracked_instances=%d lost_audit_rows=%d "
      "fenced_writes=%d "
      "takeover_ms p50=%lld max=%lld (lease 3 s; failpoint kills %d, timer kills %d, pauses %d, taken over "
      "by "
      "the replica started again %d, instances launched %d, seed %llu)\n",
      runs, audit.duplicate_launches, audit.untracked_instances, audit.lost_audit_rows, fenced,
      static_cast<long long>(p50), static_cast<long long>(max), failpoint_kills, timer_kills, pauses,
      restarted_took_over, launched, static_cast<unsigned long long>(seed));
  EXPECT_EQ(audit.live, final_nodes) << audit.Summary();
  EXPECT_EQ(audit.duplicate_launches, 0) << audit.Summary();
  EXPECT_EQ(audit.untracked_instances, 0) << audit.Summary();
  EXPECT_EQ(audit.lost_audit_rows, 0) << audit.Summary();
  EXPECT_EQ(audit.pending_actions, 0) << audit.Summary();
  EXPECT_EQ(fenced, 0) << detail;
  // Two lease durations: a hand-over after a kill takes one lease at most,
  // plus a retry period and the standby's one-second look.
  EXPECT_LE(max, 2 * 3000 + 2000);
  EXPECT_GT(pauses + timer_kills + failpoint_kills, 0);
}

// A leader never loses its Lease because its store is slow: the Lease is
// renewed on the elector's own thread, whatever the loop waits for. Another
// session holds the cluster's leadership row (as the open commit of a
// stopped replica would) while the leader's commits wait their lock timeout
// (5 s each) and fail, twice: all along the Lease stays the leader's and is
// renewed, and the standby stands by; once the row is free the leader ticks
// on in the same term.
TEST_F(FailoverCampaign, ALeaderWhoseStoreIsBlockedKeepsRenewingItsLease) {
  Start(replicas_[0], "");
  ASSERT_EQ(WaitForLeader(60s), 0) << ReadAll(replicas_[0].Log());
  Start(replicas_[1], "");
  Replica& leader = replicas_[0];
  Replica& standby = replicas_[1];
  const std::optional<json> before = api_.Get("leases", "gpuscaler/gpuscaler");
  ASSERT_TRUE(before.has_value());
  const std::string holder = before->at("spec").value("holderIdentity", "");
  const int64_t transitions = LeaseTransitions();
  const double errors_before = StoreCommitErrors(leader);
  ASSERT_GE(errors_before, 0) << ReadAll(leader.Log());

  PGconn* lock = PQconnectdb(db_.c_str());
  ASSERT_EQ(PQstatus(lock), CONNECTION_OK) << PQerrorMessage(lock);
  PGresult* held = PQexec(lock, "BEGIN; SELECT term FROM leadership WHERE cluster = 'test' FOR UPDATE");
  const bool locked = PQresultStatus(held) == PGRES_TUPLES_OK && PQntuples(held) == 1;
  PQclear(held);
  std::set<std::string> renewals;
  std::string lost;
  const bool blocked =
      locked && Eventually(
                    [&] {
                      const std::optional<json> lease = api_.Get("leases", "gpuscaler/gpuscaler");
                      const json spec = lease ? lease->value("spec", json::object()) : json::object();
                      if (spec.value("holderIdentity", "") != holder ||
                          spec.value("leaseTransitions", int64_t{-1}) != transitions) {
                        lost = spec.dump();
                        return true;
                      }
                      renewals.insert(spec.value("renewTime", ""));
                      return StoreCommitErrors(leader) >= errors_before + 2;
                    },
                    60s);
  PQclear(PQexec(lock, "ROLLBACK"));
  PQfinish(lock);
  ASSERT_TRUE(locked) << "could not lock the leadership row\n" << DatabaseActivity();
  ASSERT_TRUE(blocked && lost.empty())
      << "the Lease changed hands while the leader's store was blocked: " << lost << "\n"
      << DatabaseActivity() << "leader:\n"
      << ReadAll(leader.Log()) << "standby:\n"
      << ReadAll(standby.Log());
  // Two commits waited 5 s each: a retry period's renewal every second.
  EXPECT_GE(renewals.size(), 5u) << "the Lease was not renewed while the store was blocked";
  EXPECT_FALSE(standby.Leading());
  const int64_t ticks = leader.Ticks();
  EXPECT_TRUE(Eventually([&] { return leader.Leading() && leader.Ticks() >= ticks + 5; }, 60s))
      << ReadAll(leader.Log());
  EXPECT_EQ(LeaseTransitions(), transitions);
}

}  // namespace
}  // namespace gpuscaler::testing::failover_campaign
