// The audit store tests run on both backends: SQLite (a file in a temp dir,
// or ":memory:") and PostgreSQL (a fresh database per test on a private
// PostgreSQL 15 server, dropped when the test ends; never a mock).
//
// The server: the URL in GPUSCALER_TEST_POSTGRES_URL, else the one the ctest
// fixture postgres_server left in $GPUSCALER_TEST_POSTGRES_DIR/url (ctest
// starts it before these tests and stops it after), else, for a test binary
// run by hand, one started for this process (tests/store/postgres_server.sh)
// and stopped at its exit. Without PostgreSQL installed the PostgreSQL tests
// fail, saying to run scripts/setup.sh: they never skip.
//
//   class Runs : public testing_store::BackendTest {};
//   INSTANTIATE_TEST_SUITE_P(Backends, Runs, testing_store::AllBackends(), testing_store::BackendName);
//   TEST_P(Runs, Something) { auto store = SqliteAuditStore::Open(Db(":memory:")); ... }
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gpuscaler/store/database_url.h"
#include "src/store/db.h"
#include "src/store/pg_db.h"
#include "src/store/sqlite_db.h"
#include "store/store_test_util.h"

namespace gpuscaler::testing_store {

enum class Backend { kSqlite, kPostgres };

inline void PrintTo(Backend backend, std::ostream* out) {
  *out << (backend == Backend::kSqlite ? "SQLite" : "PostgreSQL");
}

inline auto AllBackends() { return ::testing::Values(Backend::kSqlite, Backend::kPostgres); }
inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "SQLite" : "PostgreSQL";
}

// A server this process started (no fixture): stopped when the process exits.
class OwnPostgresServer {
 public:
  OwnPostgresServer() {
    state_ = std::string(::testing::TempDir()) + "/gpuscaler_own_postgres_" + std::to_string(::getpid());
    const std::string command = Script() + " start " + state_ + " >" + state_ + ".log 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::ifstream log(state_ + ".log");
      why_ = std::string(std::istreambuf_iterator<char>(log), {});
      return;
    }
    std::ifstream in(state_ + "/url");
    std::getline(in, url_);
  }
  ~OwnPostgresServer() {
    const std::string command = Script() + " stop " + state_ + " >/dev/null 2>&1";
    (void)std::system(command.c_str());
  }
  const std::string& url() const { return url_; }
  const std::string& why() const { return why_; }

 private:
  static std::string Script() {
    return std::string(GPUSCALER_SOURCE_DIR) + "/tests/store/postgres_server.sh";
  }
  std::string state_;
  std::string url_;
  std::string why_;
};

// The test server's URL (its `postgres` database); "" after recording a
// failure that says why.
inline std::string PostgresServerUrl() {
  if (const char* url = std::getenv("GPUSCALER_TEST_POSTGRES_URL"); url != nullptr && *url != '\0')
    return url;
  if (const char* dir = std::getenv("GPUSCALER_TEST_POSTGRES_DIR"); dir != nullptr && *dir != '\0') {
    std::ifstream in(std::string(dir) + "/url");
    std::string url;
    if (std::getline(in, url) && !url.empty()) return url;
    ADD_FAILURE() << "the ctest fixture postgres_server left no URL in " << dir
                  << "/url: its setup failed (is PostgreSQL 15 installed? run scripts/setup.sh)";
    return "";
  }
  static OwnPostgresServer own;
  if (own.url().empty()) {
    ADD_FAILURE() << "could not start a PostgreSQL server for the tests; run scripts/setup.sh (it installs "
                     "postgresql-15 and libpq-dev):\n"
                  << own.why();
  }
  return own.url();
}

// `server_url` with its database replaced by `database`.
inline std::string WithDatabase(const std::string& server_url, const std::string& database) {
  const size_t authority = server_url.find("://") + 3;
  const size_t path = server_url.find('/', authority);
  const size_t query = server_url.find('?', authority);
  const std::string tail = query == std::string::npos ? "" : server_url.substr(query);
  return server_url.substr(0, path == std::string::npos ? query : path) + "/" + database + tail;
}

// Runs `sql` on the server's maintenance database; false after recording a
// failure.
inline bool AdminSql(const std::string& server_url, const std::string& sql) {
  PGconn* conn = PQconnectdb(server_url.c_str());
  bool ok = PQstatus(conn) == CONNECTION_OK;
  if (!ok) {
    ADD_FAILURE() << "connecting to the test PostgreSQL server " << RedactDatabaseUrl(server_url) << ": "
                  << PQerrorMessage(conn);
  } else {
    PGresult* r = PQexec(conn, sql.c_str());
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) ADD_FAILURE() << sql << ": " << PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(conn);
  return ok;
}

// Fresh databases for one test, by name, on its backend; PostgreSQL ones
// are dropped at the end of the test.
class TestDatabases {
 public:
  explicit TestDatabases(Backend backend) : backend_(backend) {}
  ~TestDatabases() {
    for (const auto& [name, database] : postgres_)
      AdminSql(server_, "DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
  }
  TestDatabases(const TestDatabases&) = delete;
  TestDatabases& operator=(const TestDatabases&) = delete;

  // The path or URL of database `name` (the same for the same name within a
  // test). SQLite ":memory:" stays ":memory:".
  // `exact`: the PostgreSQL database is named `name` itself (a report names
  // a store without a cluster name after it), replacing one left over.
  std::string Get(const std::string& name, bool exact = false) {
    if (backend_ == Backend::kSqlite) return name == ":memory:" ? name : dir_.File(name);
    auto it = postgres_.find(name);
    if (it == postgres_.end()) {
      if (server_.empty()) server_ = PostgresServerUrl();
      if (server_.empty()) return "postgresql://no-test-server.invalid/none";
      static int counter = 0;
      const std::string database =
          exact ? name : "gs_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
      if (exact) AdminSql(server_, "DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
      if (!AdminSql(server_, "CREATE DATABASE " + database))
        return "postgresql://no-test-server.invalid/none";
      it = postgres_.emplace(name, database).first;
    }
    return WithDatabase(server_, it->second);
  }

  // A raw read-write connection to database `name` (migrations by hand).
  std::shared_ptr<store_internal::Connection> Connect(const std::string& name) {
    const std::string db = Get(name);
    if (backend_ == Backend::kPostgres) {
      return std::move(store_internal::PostgresConnection::Connect({.url = db})).value();
    }
    return std::move(store_internal::Connection::Open(db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                                      std::chrono::milliseconds(100)))
        .value();
  }

  const TempDir& dir() const { return dir_; }

 private:
  Backend backend_;
  TempDir dir_;
  std::string server_;
  std::map<std::string, std::string> postgres_;
};

class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  BackendTest() : databases_(GetParam()) {}
  Backend backend() const { return GetParam(); }
  bool postgres() const { return GetParam() == Backend::kPostgres; }
  std::string Db(const std::string& name = "audit.db") { return databases_.Get(name); }
  std::shared_ptr<store_internal::Connection> Connect(const std::string& name = "audit.db") {
    return databases_.Connect(name);
  }
  const TempDir& dir() const { return databases_.dir(); }

 private:
  TestDatabases databases_;
};

}  // namespace gpuscaler::testing_store
