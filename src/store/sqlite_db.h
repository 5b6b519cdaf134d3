// The SQLite side of the database seam (db.h): a thin RAII layer over the
// SQLite C API.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <unordered_map>

#include "db.h"

namespace gpuscaler::store_internal {

// The Error for a failed SQLite call: kTransient for BUSY/LOCKED, disk full
// and I/O errors; kInvalidInput for constraint violations (kNotFound for a
// foreign key); kConfig for files that cannot be opened or written or are not
// databases; kInternal otherwise.
Error SqliteError(int rc, sqlite3* db, std::string_view context);

class SqliteStatement final : public Statement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Bind only fails on a parameter index out of range or OOM: programming
  // errors caught by the tests, and a later Step reports the statement as
  // misused.
  void BindInt(int i, int64_t v) override { sqlite3_bind_int64(stmt_, i, v); }
  void BindReal(int i, double v) override { sqlite3_bind_double(stmt_, i, v); }
  void BindText(int i, std::string_view v) override {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, std::string_view bytes) override {
    sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  void BindNull(int i) override { sqlite3_bind_null(stmt_, i); }
  Result<bool> Step(std::string_view what) override;
  void Reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t Int(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const override { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const override { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string_view TextView(int col) const override;
  std::string Blob(int col) const override;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class SqliteConnection final : public Connection {
 public:
  // See Connection::Open.
  static Result<std::shared_ptr<SqliteConnection>> OpenFile(const std::string& path, int flags,
                                                            std::chrono::milliseconds busy_timeout);
  ~SqliteConnection() override;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  Dialect dialect() const override { return Dialect::kSqlite; }
  Result<Query> Prepare(const char* sql) override;
  Status Exec(const char* sql, std::string_view what) override;
  bool Autocommit() const override { return sqlite3_get_autocommit(db_) != 0; }
  int64_t Changes() const override { return sqlite3_changes(db_); }
  sqlite3* raw() const { return db_; }

 private:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}

  sqlite3* db_;
  std::unordered_map<std::string, std::unique_ptr<SqliteStatement>> statements_;
};

}  // namespace gpuscaler::store_internal
