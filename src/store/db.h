// The audit store's database seam: one connection to SQLite or PostgreSQL,
// its cache of prepared statements, and the backend's errors turned into
// Errors. The store's SQL is written once, in the subset both understand,
// with SQLite's `?N` parameters; the PostgreSQL connection renders it
// (dialect.h) when it first prepares it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::store_internal {

enum class Dialect { kSqlite, kPostgres };

// One prepared statement of a backend: bind, step, read columns. Parameters
// and columns as in Query.
class Statement {
 public:
  virtual ~Statement() = default;
  virtual void BindInt(int i, int64_t v) = 0;
  virtual void BindReal(int i, double v) = 0;
  virtual void BindText(int i, std::string_view v) = 0;
  virtual void BindBlob(int i, std::string_view bytes) = 0;
  virtual void BindNull(int i) = 0;
  virtual Result<bool> Step(std::string_view what) = 0;
  // Back to before the first Step, with no bindings.
  virtual void Reset() = 0;
  virtual int64_t Int(int col) const = 0;
  virtual double Real(int col) const = 0;
  virtual bool IsNull(int col) const = 0;
  virtual std::string_view TextView(int col) const = 0;
  virtual std::string Blob(int col) const = 0;
};

// A cached prepared statement in use: bind, step, read columns. Resets the
// statement and clears its bindings when it goes out of scope, so no
// statement keeps a read transaction open.
class Query {
 public:
  explicit Query(Statement* stmt) : stmt_(stmt) {}
  ~Query() {
    if (stmt_ != nullptr) stmt_->Reset();
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  Query(Query&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }

  // Parameters are 1-based, as in SQLite. Text is copied.
  Query& Bind(int i, int64_t v) {
    stmt_->BindInt(i, v);
    return *this;
  }
  Query& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Query& Bind(int i, bool v) { return Bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Query& Bind(int i, double v) {
    stmt_->BindReal(i, v);
    return *this;
  }
  Query& Bind(int i, std::string_view v) {
    stmt_->BindText(i, v);
    return *this;
  }
  Query& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Query& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Query& Bind(int i, WallTime t) { return Bind(i, ToUnixSeconds(t)); }
  Query& BindNull(int i) {
    stmt_->BindNull(i);
    return *this;
  }
  // Binary bytes as a BLOB (bytea in PostgreSQL; copied).
  Query& BindBlob(int i, std::string_view bytes) {
    stmt_->BindBlob(i, bytes);
    return *this;
  }
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
  Result<bool> Step(std::string_view what) { return stmt_->Step(what); }
  // Steps a statement that returns no rows.
  Status Run(std::string_view what) {
    Result<bool> r = Step(what);
    if (!r) return r.error();
    return Status::Ok();
  }

  int64_t Int(int col) const { return stmt_->Int(col); }
  double Real(int col) const { return stmt_->Real(col); }
  bool IsNull(int col) const { return stmt_->IsNull(col); }
  std::string Text(int col) const { return std::string(TextView(col)); }
  // The text in place: valid until the next Step or Reset (SQLite: or a
  // column read of another type).
  std::string_view TextView(int col) const { return stmt_->TextView(col); }
  // A BLOB (or any) column's bytes.
  std::string Blob(int col) const { return stmt_->Blob(col); }
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
  Statement* stmt_;
};

class Connection {
 public:
  virtual ~Connection() = default;

  // Opens the SQLite file `path` (sqlite_db.h): flags are SQLITE_OPEN_*
  // (NOMUTEX and extended result codes are added).
  static Result<std::shared_ptr<Connection>> Open(const std::string& path, int flags,
                                                  std::chrono::milliseconds busy_timeout);

  virtual Dialect dialect() const = 0;

  // The cached statement for `sql` (prepared on first use). `sql` must be a
  // constant: values are bound, never formatted in.
  virtual Result<Query> Prepare(const char* sql) = 0;
  // Prepares `sql` (cached, as Prepare), binds `params` to ?1, ?2, ... and
  // steps it to the end: for statements that return no rows.
  template <typename... Params>
  Status Run(const char* sql, std::string_view what, const Params&... params) {
    Result<Query> q = Prepare(sql);
    if (!q) return q.error();
    return q->BindFrom(1, params...).Run(what);
  }
  // Runs constant SQL with no parameters (DDL, transaction control), one or
  // more statements. Not cached: for migrations and one-off settings.
  virtual Status Exec(const char* sql, std::string_view what) = 0;

  // True when no transaction is open (also after the backend rolled one back
  // on its own: SQLite on a full disk, PostgreSQL on a lost connection).
  virtual bool Autocommit() const = 0;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  virtual int64_t Changes() const = 0;
};

}  // namespace gpuscaler::store_internal
