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
//    is then continued and must write nothing (fencing) and act on nothing.
// The killed replica is started again as the standby. After every run the
// invariants that must hold at every instant are checked (no instance
// without a durable intent, none launched twice, decisions' leadership terms
// never going back); at the end the leader settles the fleet and
// everything is checked. It prints
//   failover campaign: runs=N duplicate_launches=0 untracked_instances=0 lost_audit_rows=0 fenced_writes=0
//   takeover_ms p50=… max=…
// (figures in bench/RESULTS.md, method in docs/reliability.md).
//
// GPUSCALER_FAILOVER_RUNS (default 12; the figure is a run of 100 or more)
// and GPUSCALER_FAILOVER_SEED (default 1) change the campaign.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

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
    CliTest::TearDown();
  }

  static void WriteIn(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
  }

  void Start(Replica& r, const std::string& failpoint) {
    r.failpoint = failpoint;
    r.process = StartDaemon(r.dir, kTickMs, failpoint, r.starts++);
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
  std::mt19937_64 rng(seed);
  std::printf("failover campaign: seed=%llu runs=%d store=%s\n", static_cast<unsigned long long>(seed), runs,
              RedactDatabaseUrl(db_).c_str());
  const std::vector<std::string>& points = failpoint::Names();
  Start(replicas_[0], "");
  ASSERT_GE(WaitForLeader(60s), 0) << ReadAll(replicas_[0].Log());
  Start(replicas_[1], "");

  std::vector<int64_t> takeover_ms;
  int failpoint_kills = 0, timer_kills = 0, pauses = 0, fenced = 0;
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
        EXPECT_EQ(*code, 128 + SIGKILL) << "run " << run << ": exited " << *code << "\n" << ReadAll(old.Log());
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
    int led = -1;
    const auto wait_until = Clock::now() + 60s;
    while (led < 0 && Clock::now() < wait_until) {
      for (int k = 0; k < 2 && led < 0; ++k) {
        Replica& r = *order[k];
        if (mode == 2 && &r == &old) continue;  // stopped
        if (std::optional<int> code = r.process->Wait(0ms)) {
          EXPECT_EQ(*code, 128 + SIGKILL) << "run " << run << ": exited " << *code << "\n" << ReadAll(r.Log());
          ++failpoint_kills;
          out = Clock::now();
          Start(r, "");
          baseline[k] = 0;
          continue;
        }
        const json status = r.Status();
        if (status.is_object() && status.value("leader", false) && status.value("ticks", int64_t{0}) > baseline[k])
          led = k;
      }
      if (led < 0) std::this_thread::sleep_for(20ms);
    }
    ASSERT_GE(led, 0) << "run " << run << ": no replica took over\n"
                      << DatabaseActivity() << ReadAll(next.Log()) << ReadAll(old.Log());
    takeover_ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - out).count());
    if (mode == 2) {
      // The paused leader wakes past its term: it must find the Lease gone
      // and write nothing under its old term (FencedWrites below). Then
      // some replica leads on.
      old.process->Signal(SIGCONT);
      const int64_t ticks_then = order[led]->Ticks();
      const bool went_on = Eventually(
          [&] {
            for (Replica& r : replicas_) {
              const json st = r.Status();
              if (st.is_object() && st.value("leader", false) &&
                  (&r != order[led] || st.value("ticks", int64_t{0}) >= ticks_then + 5))
                return &r != &old || st.value("ticks", int64_t{0}) > 0;
            }
            return false;
          },
          60s);
      ASSERT_TRUE(went_on) << "run " << run << ": no replica led on once the paused one went on\n"
                           << DatabaseActivity() << "leader:\n" << ReadAll(order[led]->Log()) << "continued:\n"
                           << ReadAll(old.Log());
    }
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
      "failover campaign: runs=%d duplicate_launches=%d untracked_instances=%d lost_audit_rows=%d fenced_writes=%d "
      "takeover_ms p50=%lld max=%lld (lease 3 s; failpoint kills %d, timer kills %d, pauses %d, instances "
      "launched %d, seed %llu)\n",
      runs, audit.duplicate_launches, audit.untracked_instances, audit.lost_audit_rows, fenced,
      static_cast<long long>(p50), static_cast<long long>(max), failpoint_kills, timer_kills, pauses, launched,
      static_cast<unsigned long long>(seed));
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

}  // namespace
}  // namespace gpuscaler::testing::failover_campaign
