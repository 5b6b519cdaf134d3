// The PostgreSQL side of the database seam (db.h), over libpq's C API.
//
// Statements are rendered once (dialect.h), sent with their parameters as
// text (BLOBs as binary bytea) and their types left for the server to infer
// from where they appear; a result is fetched whole. Inside a transaction
// each write runs under a savepoint, so that a failed write (a constraint, a
// duplicate key) undoes only itself, as in SQLite, instead of aborting the
// transaction. A transaction that fails otherwise (its connection lost) is
// rolled back: Autocommit() is true again, as SQLite after a full disk.
// A lost connection is re-established at the next statement outside a
// transaction.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db.h"

namespace gpuscaler::store_internal {

struct PostgresOptions {
  std::string url;  // postgresql://… or postgres://… (libpq's URI form)
  std::optional<std::string> password = std::nullopt;  // overrides the URL's, PGPASSWORD and PGPASSFILE
  bool read_only = false;                              // default_transaction_read_only for the session
  std::chrono::seconds connect_timeout{10};
  // How long a statement waits for a row lock another writer holds before
  // it fails with kTransient (as SQLite's busy timeout); 0: the server's.
  std::chrono::milliseconds lock_timeout{0};
};

class PostgresConnection;

class PostgresStatement final : public Statement {
 public:
  // `parameters`: for each of the store's ?N, its $M in `sql` (PostgresSql).
  PostgresStatement(PostgresConnection* db, std::string sql, std::vector<int> parameters, bool is_write)
      : db_(db), sql_(std::move(sql)), parameters_(std::move(parameters)), is_write_(is_write) {}
  ~PostgresStatement() override { Reset(); }
  PostgresStatement(const PostgresStatement&) = delete;
  PostgresStatement& operator=(const PostgresStatement&) = delete;

  void BindInt(int i, int64_t v) override { Set(i, std::to_string(v), 0); }
  void BindReal(int i, double v) override;
  // Text with a NUL byte (PostgreSQL's text cannot hold one) makes Step
  // fail with kInvalidInput rather than store it cut short.
  void BindText(int i, std::string_view v) override;
  void BindBlob(int i, std::string_view bytes) override { Set(i, std::string(bytes), 1); }
  void BindNull(int i) override;
  Result<bool> Step(std::string_view what) override;
  void Reset() override;
  int64_t Int(int col) const override;
  double Real(int col) const override;
  bool IsNull(int col) const override { return PQgetisnull(result_, row_, col) != 0; }
  std::string_view TextView(int col) const override;
  std::string Blob(int col) const override;

 private:
  void Set(int i, std::string value, int format);

  PostgresConnection* db_;
  std::string sql_;
  std::vector<int> parameters_;
  bool is_write_;
  std::vector<std::optional<std::string>> values_;  // by $M - 1
  std::vector<int> formats_;                        // 0 text, 1 binary
  bool has_nul_ = false;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

class PostgresConnection final : public Connection {
 public:
  // Connects (kConfig for a URL libpq cannot parse; kTransient when the
  // server cannot be reached or refuses the login: libpq gives no code to
  // tell them apart). Errors name the URL without its password.
  static Result<std::shared_ptr<PostgresConnection>> Connect(const PostgresOptions& options);
  ~PostgresConnection() override;
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  Dialect dialect() const override { return Dialect::kPostgres; }
  Result<Query> Prepare(const char* sql) override;
  Status Exec(const char* sql, std::string_view what) override;
  bool Autocommit() const override;
  int64_t Changes() const override { return changes_; }

  // Runs one rendered statement with its parameters (PostgresStatement's
  // Step): the result of a statement that succeeded, else its Error.
  Result<PGresult*> Execute(const std::string& sql, bool is_write,
                            const std::vector<std::optional<std::string>>& values,
                            const std::vector<int>& formats, std::string_view what);

 private:
  PostgresConnection(PGconn* conn, std::string redacted_url)
      : conn_(conn), redacted_url_(std::move(redacted_url)) {}
  // Re-establishes a lost connection outside a transaction (kTransient when
  // it cannot).
  Status EnsureConnected(std::string_view what);
  // The Error for a failed result (nullptr: no result at all); rolls back a
  // transaction the failure aborted.
  Error Fail(PGresult* result, std::string_view what);
  // Runs SQL without parameters for its side effect (savepoints).
  Status Simple(const char* sql, std::string_view what);

  PGconn* conn_;
  std::string redacted_url_;
  int64_t changes_ = 0;
  std::unordered_map<std::string, std::unique_ptr<PostgresStatement>> statements_;
};

}  // namespace gpuscaler::store_internal
