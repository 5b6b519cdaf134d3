#include "sqlite_db.h"

#include <string>

namespace gpuscaler::store_internal {

Error SqliteError(int rc, sqlite3* db, std::string_view context) {
  std::string message(context);
  message += ": ";
  // sqlite3_errmsg describes the connection's last failure, which is this one
  // unless the caller has made another call since.
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  message += detail;
  const std::string generic = sqlite3_errstr(rc);
  if (generic != detail) {
    message += " (" + generic + ")";
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error::Transient(message + "; another connection holds the lock, retry later");
    case SQLITE_FULL:
      return Error::Transient("disk full, audit records not written: " + message);
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_INTERRUPT:
    case SQLITE_PROTOCOL:
      return Error::Transient(message);
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return Error::NotFound(message + ": refers to a missing row");
      return Error::InvalidInput(message);
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return Error::InvalidInput(message);
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_NOTADB:
      return Error::Config(message);
    default:
      return Error::Internal(message);
  }
}

Result<bool> SqliteStatement::Step(std::string_view what) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(sqlite3_extended_errcode(db_), db_, what);
}

std::string_view SqliteStatement::TextView(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string SqliteStatement::Blob(int col) const {
  const void* bytes = sqlite3_column_blob(stmt_, col);
  if (bytes == nullptr) return {};
  return std::string(static_cast<const char*>(bytes), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

Result<std::shared_ptr<Connection>> Connection::Open(const std::string& path, int flags,
                                                     std::chrono::milliseconds busy_timeout) {
  Result<std::shared_ptr<SqliteConnection>> db = SqliteConnection::OpenFile(path, flags, busy_timeout);
  if (!db) return db.error();
  return std::shared_ptr<Connection>(std::move(*db));
}

Result<std::shared_ptr<SqliteConnection>> SqliteConnection::OpenFile(const std::string& path, int flags,
                                                                     std::chrono::milliseconds busy_timeout) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error error = SqliteError(rc, db, "opening audit database '" + path + "'");
    sqlite3_close_v2(db);  // a handle is allocated even on failure
    return error;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(busy_timeout.count()));
  return std::shared_ptr<SqliteConnection>(new SqliteConnection(db));
}

SqliteConnection::~SqliteConnection() {
  statements_.clear();
  // Closing with a transaction open rolls it back, as a crash would.
  sqlite3_close_v2(db_);
}

Result<Query> SqliteConnection::Prepare(const char* sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      return SqliteError(rc, db_, std::string("preparing \"") + sql + "\"");
    }
    it = statements_.emplace(sql, std::make_unique<SqliteStatement>(db_, stmt)).first;
  }
  return Query(it->second.get());
}

Status SqliteConnection::Exec(const char* sql, std::string_view what) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);  // the same text as sqlite3_errmsg, which SqliteError reads
  if (rc != SQLITE_OK) return SqliteError(sqlite3_extended_errcode(db_), db_, what);
  return Status::Ok();
}

}  // namespace gpuscaler::store_internal
