// A thin RAII layer over the SQLite C API: one connection, its cache of
// prepared statements, and SQLite result codes turned into Errors.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::store_internal {

// The Error for a failed SQLite call: kTransient for BUSY/LOCKED, disk full
// and I/O errors; kInvalidInput for constraint violations (kNotFound for a
// foreign key); kConfig for files that cannot be opened or written or are not
// databases; kInternal otherwise.
Error SqliteError(int rc, sqlite3* db, std::string_view context);

class Connection;

// A cached prepared statement in use: bind, step, read columns. Resets the
// statement and clears its bindings when it goes out of scope, so no
// statement keeps a read transaction open.
class Query {
 public:
  Query(Connection* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  Query(Query&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

  // Parameters are 1-based, as in SQLite. Text is copied.
  Query& Bind(int i, int64_t v);
  Query& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Query& Bind(int i, bool v) { return Bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Query& Bind(int i, double v);
  Query& Bind(int i, std::string_view v);
  Query& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Query& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Query& Bind(int i, WallTime t) { return Bind(i, ToUnixSeconds(t)); }
  Query& BindNull(int i);
  // Binary bytes as a BLOB (copied).
  Query& BindBlob(int i, std::string_view bytes);
  Query& Bind(int i, std::optional<int64_t> v) { return v ? Bind(i, *v) : BindNull(i); }
  Query& Bind(int i, std::optional<WallTime> v) { return v ? Bind(i, *v) : BindNull(i); }
  Query& Bind(int i, std::optional<double> v) { return v ? Bind(i, *v) : BindNull(i); }
  Query& Bind(int i, const std::optional<std::string>& v) { return v ? Bind(i, *v) : BindNull(i); }
  // Binds `values` to parameters first, first + 1, ... in order.
  template <typename... Values>
  Query& BindFrom(int first, const Values&... values) {
    (Bind(first++, values), ...);
    return *this;
  }

  // True: a row is ready; false: done. `what` names the operation in errors.
  Result<bool> Step(std::string_view what);
  // Steps a statement that returns no rows.
  Status Run(std::string_view what);

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  // The text in place: valid until the next Step, Reset or column read of another type.
  std::string_view TextView(int col) const;
  // A BLOB (or any) column's bytes.
  std::string Blob(int col) const;
  WallTime Time(int col) const { return FromUnixSeconds(Int(col)); }
  std::optional<WallTime> OptionalTime(int col) const {
    if (IsNull(col)) return std::nullopt;
    return Time(col);
  }
  // The column as the type of `*out`, for reading a row into a record's fields.
  void Get(int col, std::string* out) const { *out = Text(col); }
  void Get(int col, int64_t* out) const { *out = Int(col); }
  void Get(int col, int* out) const { *out = static_cast<int>(Int(col)); }
  void Get(int col, bool* out) const { *out = Int(col) != 0; }
  void Get(int col, double* out) const { *out = Real(col); }
  void Get(int col, WallTime* out) const { *out = Time(col); }
  void Get(int col, std::optional<double>* out) const {
    *out = IsNull(col) ? std::nullopt : std::optional<double>(Real(col));
  }

 private:
  Connection* db_;
  sqlite3_stmt* stmt_;
};

class Connection {
 public:
  // flags: SQLITE_OPEN_* (NOMUTEX and extended result codes are added).
  static Result<std::shared_ptr<Connection>> Open(const std::string& path, int flags,
                                                  std::chrono::milliseconds busy_timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The cached statement for `sql` (prepared on first use). `sql` must be a
  // constant: values are bound, never formatted in.
  Result<Query> Prepare(const char* sql);
  // Prepares `sql` (cached, as Prepare), binds `params` to ?1, ?2, ... and
  // steps it to the end: for statements that return no rows.
  template <typename... Params>
  Status Run(const char* sql, std::string_view what, const Params&... params) {
    Result<Query> q = Prepare(sql);
    if (!q) return q.error();
    return q->BindFrom(1, params...).Run(what);
  }
  // Runs constant SQL with no parameters (DDL, transaction control). Not
  // cached: for migrations and one-off pragmas.
  Status Exec(const char* sql, std::string_view what);

  // True when no transaction is open.
  bool Autocommit() const { return sqlite3_get_autocommit(db_) != 0; }
  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  sqlite3* raw() const { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace gpuscaler::store_internal
