// The promise of docs/reliability.md ("Failover and fencing") on a real
// PostgreSQL: a replica stopped (SIGSTOP) in the middle of a commit, after
// its fence check locked the cluster's leadership row, keeps that lock only
// until the server ends its session, five idle seconds later; the next
// leader's claim and first commit then go through, and the stopped one's
// write is refused once it is continued.
//
// The stopped replica is a child process writing ticks in a loop; it is
// stopped until it is caught where the promise is about: its session idle
// in a transaction whose last statement was the fence's SELECT … FOR UPDATE
// (the server's own pg_stat_activity says so, and a NOWAIT probe finds the
// row locked).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler::leadership_pause_test {
namespace {

using namespace std::chrono_literals;
using testing_store::FullDecision;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kStoppedHolder = "gpuscaler:prod:replica-a";  // application_name after its claim

std::string PauseReportText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One row of the stopped replica's session in pg_stat_activity.
struct Session {
  bool found = false;
  std::string pid;
  std::string state;
  std::string query;
};

// A plain libpq connection of the test's own (never the store's code).
class Probe {
 public:
  explicit Probe(const std::string& url) : conn_(PQconnectdb(url.c_str())) {}
  ~Probe() { PQfinish(conn_); }
  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }
  std::string error() const { return PQerrorMessage(conn_); }

  Session Holder() {
    Session s;
    PGresult* r = PQexec(
        conn_, (std::string("SELECT pid, state, query FROM pg_stat_activity WHERE application_name = '") +
                kStoppedHolder + "'")
                   .c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      s = {true, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2)};
    }
    PQclear(r);
    return s;
  }

  // The SQLSTATE of locking the cluster's leadership row without waiting
  // ("" when it was free; 55P03 when another session holds it).
  std::string LockNowait() {
    PGresult* r =
        PQexec(conn_, "BEGIN; SELECT term FROM leadership WHERE cluster = 'prod' FOR UPDATE NOWAIT");
    const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    std::string state = PQresultStatus(r) == PGRES_TUPLES_OK ? "" : (code != nullptr ? code : "?");
    PQclear(r);
    PQclear(PQexec(conn_, "ROLLBACK"));
    return state;
  }

 private:
  PGconn* conn_;
};

// The stopped replica: claims term 1, then commits one decision per tick
// until a commit fails; reports how many landed, that failure, and what one
// more tick got (the report file's lines), and exits.
[[noreturn]] void RunStoppedReplica(const std::string& url, const std::string& report_path) {
  std::ofstream report(report_path);
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(url);
  if (!store) {
    report << "open\n" << store.error().ToString() << "\n";
    report.close();
    ::_exit(2);
  }
  if (Status s = (*store)->ClaimLeadership({"prod", 1, "replica-a", testing_store::T(100)}); !s.ok()) {
    report << "claim\n" << s.error().ToString() << "\n";
    report.close();
    ::_exit(2);
  }
  int64_t committed = 0;
  Status failed;
  for (;;) {
    Status s = (*store)->BeginTick();
    if (s.ok()) {
      Result<int64_t> d = (*store)->RecordDecision(FullDecision(200 + committed));
      if (!d) s = d.error();
    }
    Status c = (*store)->CommitTick();
    if (s.ok()) s = c;
    if (!s.ok()) {
      failed = s;
      break;
    }
    ++committed;
  }
  Status again = (*store)->BeginTick();
  if (again.ok()) {
    Result<int64_t> d = (*store)->RecordDecision(FullDecision(900));
    Status c = (*store)->CommitTick();
    again = d.ok() ? c : Status(d.error());
  }
  // One line each (the server's messages span lines).
  const auto line = [](std::string text) {
    for (char& c : text) c = c == '\n' ? ' ' : c;
    return text;
  };
  report << committed << "\n"
         << line(failed.error().ToString()) << "\n"
         << (again.ok() ? std::string("ok") : line(again.error().ToString())) << "\n";
  report.close();
  ::_exit(0);
}

// Waits (up to 10 s) until `pid` is stopped: a signal sent is not yet
// delivered when kill() returns, and the process may run on meanwhile.
bool WaitStopped(pid_t pid) {
  const auto until = SteadyClock::now() + 10s;
  do {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t close = text.rfind(')');  // the command name may hold spaces
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'T') return true;
    std::this_thread::yield();
  } while (SteadyClock::now() < until);
  return false;
}

class StoppedLeaderOnPostgres : public ::testing::Test {
 protected:
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGCONT);
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
  }

  // Exit status of the child, waiting up to `within`; nullopt if it runs on.
  std::optional<int> WaitChild(std::chrono::milliseconds within) {
    const auto until = SteadyClock::now() + within;
    do {
      int status = 0;
      if (::waitpid(child_, &status, WNOHANG) == child_) {
        child_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    } while (SteadyClock::now() < until);
    return std::nullopt;
  }

  testing_store::TestDatabases databases_{testing_store::Backend::kPostgres};
  testing_store::TempDir dir_;
  pid_t child_ = -1;
};

TEST_F(StoppedLeaderOnPostgres, ItsRowLockEndsAfterFiveIdleSecondsAndTheNextLeaderCommitsWithinTen) {
  const std::string url = databases_.Get("audit");
  const std::string report = dir_.File("report");
  {
    // Migrated before the child starts, so the probe finds the tables.
    Result<std::unique_ptr<SqliteAuditStore>> created = SqliteAuditStore::Open(url);
    ASSERT_TRUE(created.ok()) << created.error().ToString();
  }
  Probe probe(url);
  ASSERT_TRUE(probe.ok()) << probe.error();
  child_ = ::fork();
  ASSERT_GE(child_, 0);
  if (child_ == 0) RunStoppedReplica(url, report);

  // Stopped at random moments until caught holding the fence's row lock.
  std::mt19937 rng(7);
  Session held;
  int tries = 0;
  const auto give_up = SteadyClock::now() + 120s;
  while (SteadyClock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    ASSERT_EQ(::kill(child_, SIGSTOP), 0);
    ++tries;
    ASSERT_TRUE(WaitStopped(child_)) << "SIGSTOP did not stop the writing replica";
    // A statement in flight when it stopped still finishes on the server.
    Session s = probe.Holder();
    const auto settle = SteadyClock::now() + 10s;
    while (s.found && s.state == "active" && SteadyClock::now() < settle) s = probe.Holder();
    // Caught when the last statement was the fence's and the session stays
    // idle after it: a COMMIT sent just before the stop, not yet read by the
    // server, would end that within milliseconds.
    const auto idle_since = SteadyClock::now();
    while (s.found && s.state == "idle in transaction" && s.query.find("FOR UPDATE") != std::string::npos &&
           SteadyClock::now() - idle_since < 200ms) {
      s = probe.Holder();
    }
    if (s.found && s.state == "idle in transaction" && s.query.find("FOR UPDATE") != std::string::npos) {
      held = s;
      break;
    }
    ASSERT_EQ(::kill(child_, SIGCONT), 0);
    ASSERT_FALSE(WaitChild(0ms).has_value()) << "the writing replica ended early:\n"
                                             << PauseReportText(report);
  }
  ASSERT_TRUE(held.found) << "never caught holding the fence lock in " << tries << " stops";
  ASSERT_EQ(probe.LockNowait(), "55P03") << "the stopped replica's session " << held.pid
                                         << " does not hold the leadership row (" << held.query << ")";

  // The next leader (another store, as the other replica's) claims term 2
  // and commits its first tick. A claim that waited out its lock_timeout
  // (the server's timers race: both are five seconds) fails kTransient, and
  // is tried again, as the daemon's loop does on its next pass.
  Result<std::unique_ptr<SqliteAuditStore>> next = SqliteAuditStore::Open(url);
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  const auto claim_started = SteadyClock::now();
  int claims = 0;
  Status claimed;
  do {
    ++claims;
    claimed = (*next)->ClaimLeadership({"prod", 2, "replica-b", testing_store::T(300)});
  } while (!claimed.ok() && claimed.error().category() == ErrorCategory::kTransient &&
           SteadyClock::now() - claim_started < 30s);
  ASSERT_TRUE(claimed.ok()) << claimed.error().ToString();
  ASSERT_TRUE((*next)->BeginTick().ok());
  Result<int64_t> first = (*next)->RecordDecision(FullDecision(310));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  Status committed = (*next)->CommitTick();
  ASSERT_TRUE(committed.ok()) << committed.error().ToString();
  const double took_s = std::chrono::duration<double>(SteadyClock::now() - claim_started).count();
  EXPECT_LT(took_s, 10.0) << "the claim (" << claims
                          << " tries) and first commit waited for the stopped replica";
  // About five seconds less the 200 ms it was watched idle: the claim did
  // wait for the stopped one's lock (else this test proves nothing).
  EXPECT_GT(took_s, 2.0) << "the claim waited for no lock";
  EXPECT_FALSE(probe.Holder().found) << "the stopped replica's session outlived the idle timeout";

  // Continued, the stopped replica's commit fails (its session is gone), and
  // its next tick, on a new session, is fenced.
  ASSERT_EQ(::kill(child_, SIGCONT), 0);
  const std::optional<int> code = WaitChild(60s);
  ASSERT_TRUE(code.has_value()) << "the continued replica kept committing:\n" << PauseReportText(report);
  ASSERT_EQ(*code, 0) << PauseReportText(report);
  std::ifstream in(report);
  std::string landed, failure, after;
  std::getline(in, landed);
  std::getline(in, failure);
  std::getline(in, after);
  EXPECT_NE(failure.find("transient"), std::string::npos) << failure;
  EXPECT_NE(after.find("fenced"), std::string::npos) << after;
  EXPECT_NE(after.find("term 2 (replica-b)"), std::string::npos) << after;

  // Exactly the ticks it committed before the stop are there, under term 1;
  // B's under term 2 after them.
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(url);
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  Result<std::vector<std::pair<int64_t, int64_t>>> terms = (*reader)->DecisionTerms(0, 100000);
  ASSERT_TRUE(terms.ok()) << terms.error().ToString();
  ASSERT_EQ(static_cast<int64_t>(terms->size()), std::stoll(landed) + 1) << "report:\n"
                                                                         << PauseReportText(report);
  for (size_t i = 0; i + 1 < terms->size(); ++i) EXPECT_EQ((*terms)[i].second, 1) << "decision " << i;
  EXPECT_EQ(terms->back().second, 2);
  std::printf(
      "stopped leader: caught holding the fence lock after %d stops; the next leader's claim (%d tries) "
      "and first commit took %.2f s\n",
      tries, claims, took_s);
}

}  // namespace
}  // namespace gpuscaler::leadership_pause_test
