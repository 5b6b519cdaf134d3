// The audit store under storage faults, driven by the production Controller:
// another connection holding the write lock, and a full disk in
// three forms (the store's own size cap, the process's file size limit, a
// full tmpfs). For each fault, while it lasts and after it clears:
//  - the controller keeps ticking, and each tick reports the fault;
//  - no cloud call is made unless its intent is committed: checked at the
//    moment of the call, from a separate connection (what a crash would leave);
//  - once the fault clears, the next ticks act and record again;
//  - a restart on the same file reconciles every intent left open, and
//    PRAGMA integrity_check passes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/g5_fleet.h"
#include "fakes/recording_planner.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/store_test_util.h"

namespace gpuscaler {
namespace {

using testing::FakeClock;
using testing::FakeCloudProvider;
using testing::FakeWorkSource;
using testing_store::TempDir;

Catalog OneTypeCatalog() { return testing::G5XlargeCatalog({"us-east-1a"}); }

Policy OnePoolPolicy() { return testing::UndampedGpuPolicy(); }

// A raw connection of its own, as another program (or a crash survivor)
// would open the file.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK) << path;
    sqlite3_busy_timeout(db_, 2000);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  bool Exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) ADD_FAILURE() << sql << ": " << (err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc == SQLITE_OK;
  }
  // The first column of every row; `bind` (if any) is parameter 1.
  std::vector<std::string> Column(const std::string& sql, const std::string& bind = "") {
    std::vector<std::string> out;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return out;
    }
    if (!bind.empty()) sqlite3_bind_text(stmt, 1, bind.c_str(), -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(stmt, 0);
      out.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return out;
  }
  std::string One(const std::string& sql, const std::string& bind = "") {
    std::vector<std::string> c = Column(sql, bind);
    return c.empty() ? "" : c.front();
  }

 private:
  sqlite3* db_ = nullptr;
};

// The controller with a scripted plan: every tick launches one node (with a
// long reason, so that the audit rows fill a small disk quickly), and every
// second tick also removes the oldest node.
struct Rig {
  std::string db_path;
  SqliteAuditStoreOptions store_options;
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  Catalog catalog = OneTypeCatalog();
  std::unique_ptr<SqliteAuditStore> store;
  std::unique_ptr<Controller> controller;
  int ticks = 0;
  int calls_without_intent = 0;

  Rig(std::string path, SqliteAuditStoreOptions options) : db_path(std::move(path)), store_options(options) {
    // At the moment of each cloud call, the intent must already be committed:
    // visible to another connection.
    cloud.on_launch = [this](const LaunchRequest& r) {
      RawDb other(db_path);
      if (other.One("SELECT count(*) FROM actions WHERE idempotency_token = ?1", r.idempotency_token) != "1") {
        ++calls_without_intent;
        ADD_FAILURE() << "launch " << r.idempotency_token << " called without a committed intent";
      }
    };
    Open();
  }

  void Open() {
    Result<std::unique_ptr<SqliteAuditStore>> s = SqliteAuditStore::Open(db_path, store_options);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store = std::move(s).value();
    ControllerOptions o;  // the daemon's defaults
    controller = std::make_unique<Controller>(
        clock, cloud, store.get(), work, catalog, OnePoolPolicy(), o, [this](const Snapshot& snap, const Policy&) {
          Plan p;
          LaunchAction l;
          l.pool = "gpu";
          for (const Offering& o : snap.offerings) {
            if (o.capacity_type == CapacityType::kOnDemand) l.offering = o;
          }
          l.count = 1;
          l.reason = "storage fault test " + std::string(1500, 'r');
          p.launches = {l};
          if (ticks % 2 == 1 && !snap.nodes.empty()) {
            TerminationAction t;
            t.node_id = t.instance_id = snap.nodes.front().instance_id;
            t.pool = "gpu";
            t.reason = "storage fault test";
            p.terminations = {t};
          }
          p.summary = "launch 1";
          return p;
        });
  }

  void Close() {
    controller.reset();
    store.reset();
  }

  TickReport Tick() {
    clock.Advance(Seconds(60));
    ++ticks;
    return controller->Tick();
  }
};

bool Mentions(const TickReport& r, const std::string& text) {
  for (const Error& e : r.errors) {
    if (e.message().find(text) != std::string::npos) return true;
  }
  return false;
}

std::string Errors(const TickReport& r) {
  std::string out;
  for (const Error& e : r.errors) out += e.ToString() + "\n";
  return out;
}

// One way for the store to fail. Inject may skip the test (return a reason).
struct Fault {
  std::string name;
  std::string reported_as;  // what the tick's errors say
  SqliteAuditStoreOptions options;
  std::function<std::string(Rig&)> inject;
  std::function<void(Rig&)> clear;
  bool stops_every_launch = false;  // a lock: no intent can be written at all
};

// Runs the scenario of the file comment for `fault`.
void RunScenario(Fault& fault, const std::string& db_path) {
  SCOPED_TRACE(fault.name);
  Rig rig(db_path, fault.options);
  ASSERT_NE(rig.controller, nullptr);
  for (int i = 0; i < 3; ++i) {
    TickReport r = rig.Tick();
    ASSERT_TRUE(r.errors.empty()) << "healthy tick " << i << ":\n" << Errors(r);
    ASSERT_EQ(r.nodes_launched, 1);
  }

  const std::string skip = fault.inject(rig);
  if (!skip.empty()) {
    rig.Close();
    GTEST_SKIP() << skip;
  }
  const size_t launches_before = rig.cloud.launches.size();
  int first_failure = -1;
  for (int i = 0; i < 400 && first_failure < 0; ++i) {
    TickReport r = rig.Tick();
    if (!r.errors.empty()) {
      first_failure = i;
      EXPECT_TRUE(Mentions(r, fault.reported_as)) << Errors(r);
      for (const Error& e : r.errors) EXPECT_EQ(e.category(), ErrorCategory::kTransient) << e.ToString();
    }
  }
  ASSERT_GE(first_failure, 0) << "the fault never showed";
  // The loop keeps going under the fault, and keeps saying so.
  for (int i = 0; i < 3; ++i) {
    TickReport r = rig.Tick();
    EXPECT_FALSE(r.errors.empty()) << "tick " << i << " under the fault reported nothing";
    if (fault.stops_every_launch) {
      EXPECT_EQ(r.nodes_launched, 0);
    }
  }
  if (fault.stops_every_launch) {
    EXPECT_EQ(rig.cloud.launches.size(), launches_before);
  }

  fault.clear(rig);
  // The first tick after the fault acts and records again.
  TickReport back = rig.Tick();
  EXPECT_TRUE(back.errors.empty()) << Errors(back);
  EXPECT_EQ(back.nodes_launched, 1);
  TickReport next = rig.Tick();
  EXPECT_TRUE(next.errors.empty()) << Errors(next);

  // A restart reconciles what the fault left open (an intent whose outcome
  // could not be written) without launching it twice.
  rig.Close();
  const int instances_before_restart = rig.cloud.next_id;
  rig.Open();
  TickReport restarted = rig.Tick();
  EXPECT_TRUE(restarted.errors.empty()) << Errors(restarted);
  EXPECT_EQ(rig.cloud.next_id, instances_before_restart + 1) << "only the restarted tick's own launch is new";
  rig.Close();

  RawDb db(db_path);
  EXPECT_EQ(db.One("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.One("SELECT count(*) FROM actions WHERE outcome = 'pending'"), "0");
  EXPECT_EQ(rig.calls_without_intent, 0);
  // Every cloud call is in the audit trail: launches by token, terminations
  // by instance id.
  std::set<std::string> tokens;
  for (const std::string& t : db.Column("SELECT idempotency_token FROM actions WHERE kind = 'launch'")) tokens.insert(t);
  for (const LaunchRequest& l : rig.cloud.launches) EXPECT_EQ(tokens.count(l.idempotency_token), 1u) << l.idempotency_token;
  for (const std::vector<std::string>& ids : rig.cloud.terminations) {
    for (const std::string& id : ids) {
      EXPECT_EQ(db.One("SELECT count(*) FROM actions WHERE kind = 'terminate' AND instance_ids_json LIKE ?1",
                       "%\"" + id + "\"%"),
                "1")
          << id;
    }
  }
}

SqliteAuditStoreOptions ShortBusyTimeout() {
  SqliteAuditStoreOptions o;
  o.busy_timeout = std::chrono::milliseconds(200);
  return o;
}

TEST(StorageFaults, AWriteLockHeldByAnotherConnectionStopsActionsUntilReleased) {
  TempDir dir;
  std::unique_ptr<RawDb> holder;
  Fault f;
  f.name = "write lock";
  f.reported_as = "lock";
  f.options = ShortBusyTimeout();
  f.stops_every_launch = true;
  f.inject = [&](Rig& rig) {
    holder = std::make_unique<RawDb>(rig.db_path);
    holder->Exec("BEGIN EXCLUSIVE");
    holder->Exec("CREATE TABLE intruder (x)");
    return std::string();
  };
  f.clear = [&](Rig&) {
    holder->Exec("ROLLBACK");
    holder.reset();
  };
  RunScenario(f, dir.File("audit.db"));
}

// A locked store costs a tick one busy_timeout, not one per record: after
// BeginTick gives up, the tick's other writes fail at once.
TEST(StorageFaults, ALockedTickWaitsForTheLockOnceNotOncePerRecord) {
  TempDir dir;
  Rig rig(dir.File("audit.db"), ShortBusyTimeout());
  ASSERT_TRUE(rig.Tick().errors.empty());
  RawDb holder(rig.db_path);
  holder.Exec("BEGIN EXCLUSIVE");
  holder.Exec("CREATE TABLE intruder (x)");
  TickReport r = rig.Tick();
  ASSERT_GE(r.errors.size(), 3u) << Errors(r);  // BeginTick, the decision, CommitTick at least
  EXPECT_NE(r.errors.front().message().find("another connection holds the lock"), std::string::npos) << Errors(r);
  for (size_t i = 1; i < r.errors.size(); ++i) {
    EXPECT_NE(r.errors[i].message().find("unavailable for the rest of this tick"), std::string::npos)
        << r.errors[i].ToString();
  }
  EXPECT_EQ(r.nodes_launched, 0);
  holder.Exec("ROLLBACK");
}

TEST(StorageFaults, TheStoresSizeCapFullStopsWritesAndRecoversWhenSpaceIsFreed) {
  TempDir dir;
  Fault f;
  f.name = "max_size_mib";
  f.reported_as = "disk full";
  f.options.max_size_mib = 1;
  f.inject = [](Rig& rig) {
    // Another connection (no cap) fills the file up to a few pages below
    // the store's cap of 1,024 pages of 1 KiB.
    RawDb filler(rig.db_path);
    filler.Exec("CREATE TABLE filler (b BLOB)");
    const int pages = std::stoi(filler.One("PRAGMA page_count"));
    filler.Exec("BEGIN");
    for (int i = pages; i < 1020; ++i) filler.Exec("INSERT INTO filler VALUES (zeroblob(900))");
    filler.Exec("COMMIT");
    EXPECT_GE(std::stoi(filler.One("PRAGMA page_count")), 1018);
    return std::string();
  };
  f.clear = [](Rig& rig) { RawDb(rig.db_path).Exec("DROP TABLE filler"); };
  RunScenario(f, dir.File("audit.db"));
}

// RLIMIT_FSIZE: a write past the limit fails with EFBIG (SIGXFSZ ignored), as
// on a file system with a per-file quota. SQLite reports an I/O error.
TEST(StorageFaults, AFileSizeLimitStopsWritesAndRecoversWhenLifted) {
  TempDir dir;
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &previous), 0);
  Fault f;
  f.name = "RLIMIT_FSIZE";
  f.reported_as = "disk I/O error";
  f.inject = [&](Rig& rig) {
    std::error_code ec;
    const auto db_size = std::filesystem::file_size(rig.db_path, ec);
    const auto wal_size = std::filesystem::file_size(rig.db_path + "-wal", ec);
    rlimit tight = saved;
    tight.rlim_cur = std::max<uintmax_t>(db_size, ec ? 0 : wal_size) + 16 * 1024;
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &tight), 0);
    return std::string();
  };
  f.clear = [&](Rig&) { EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0); };
  RunScenario(f, dir.File("audit.db"));
  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &previous, nullptr);
}

// The real thing: ENOSPC from a file system that is full. Needs permission
// to mount a tmpfs (root in a container or CI runner); skipped otherwise.
TEST(StorageFaults, AFullDiskStopsWritesAndRecoversWhenSpaceIsFreed) {
  TempDir dir;
  const std::string mnt = dir.File("tmpfs");
  std::filesystem::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=2m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "); the other storage fault tests cover "
                 << "the same paths without privileges";
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string filler = mnt + "/filler";
  Fault f;
  f.name = "full tmpfs";
  f.reported_as = "disk full";
  f.inject = [&](Rig&) {
    struct statvfs st {};
    EXPECT_EQ(::statvfs(mnt.c_str(), &st), 0);
    const uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    std::ofstream out(filler, std::ios::binary);
    const std::string block(4096, 'f');
    for (uint64_t written = 0; written + block.size() + 8 * 1024 <= free_bytes; written += block.size()) out << block;
    out.close();
    return std::string();
  };
  f.clear = [&](Rig&) { std::filesystem::remove(filler); };
  RunScenario(f, mnt + "/audit.db");
}

// The learned state (learned_state.h) through a table a controller cannot
// read: the next leader reports it, saves nothing meanwhile, and once the
// table reads again restores its predecessor's marks instead of replacing
// them with its priors.
TEST(StorageFaults, AnUnreadableLearnedStateTableKeepsThePredecessorsDocumentUntilItReads) {
  TempDir dir;
  const std::string path = dir.File("audit.db");
  const std::string key = "g5.xlarge/us-east-1a/spot";
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  const Catalog catalog = OneTypeCatalog();
  DemandUnit job;
  job.id = "job-1";
  job.workload_class = "batch";
  job.gpus = 1;
  work.SetPending({job});
  cloud.no_capacity = {key};
  std::vector<Snapshot> seen;
  Plan next;
  auto make = [&](SqliteAuditStore* store) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    o.learned_state_owner = "prod";
    return std::make_unique<Controller>(clock, cloud, store, work, catalog, OnePoolPolicy(), o,
                                        testing::RecordingPlanner(&seen, &next));
  };
  {
    std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(path)).value();
    std::unique_ptr<Controller> first = make(store.get());
    first->Tick();
    LaunchAction l;
    l.pool = "gpu";
    for (const Offering& o : seen.back().offerings)
      if (o.Key() == key) l.offering = o;
    l.count = 1;
    l.unit_ids = {"job-1"};
    l.reason = "test";
    next.launches = {l};
    ASSERT_EQ(first->Tick().capacity_errors, 1);
  }
  RawDb raw(path);
  const std::string saved = raw.One("SELECT state_json FROM learned_state WHERE cluster = 'prod'");
  ASSERT_NE(saved.find(key), std::string::npos) << saved;

  ASSERT_TRUE(raw.Exec("ALTER TABLE learned_state RENAME TO learned_state_away"));
  clock.Advance(Seconds(20));
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(path)).value();
  std::unique_ptr<Controller> next_leader = make(store.get());
  TickReport unread = next_leader->Tick();
  bool reported = false;
  for (const Error& e : unread.errors) reported |= e.ToString().find("reading learned state") != std::string::npos;
  EXPECT_TRUE(reported) << "the tick's errors should name the learned state";
  EXPECT_TRUE(next_leader->availability().IsAvailable(key, clock.WallNow())) << "nothing to restore from yet";

  ASSERT_TRUE(raw.Exec("ALTER TABLE learned_state_away RENAME TO learned_state"));
  clock.Advance(Seconds(20));
  TickReport read = next_leader->Tick();
  EXPECT_TRUE(read.errors.empty()) << read.errors.front().ToString();
  EXPECT_FALSE(next_leader->availability().IsAvailable(key, clock.WallNow()));
  const std::string kept = raw.One("SELECT state_json FROM learned_state WHERE cluster = 'prod'");
  EXPECT_NE(kept.find(key), std::string::npos) << kept;
}

}  // namespace
}  // namespace gpuscaler
