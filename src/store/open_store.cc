// Opening an audit store: a SQLite file (its pragmas) or a PostgreSQL
// database, then the schema migrations either lacks.
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "gpuscaler/store/database_url.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "pg_db.h"
#include "schema.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Connection;
using store_internal::Query;

namespace {

bool IsMemoryPath(const std::string& path) { return path == ":memory:" || path.empty(); }

}  // namespace

int SqliteAuditStore::CurrentSchemaVersion() { return store_internal::AuditMigrations().back().version; }

Result<std::unique_ptr<SqliteAuditStore>> SqliteAuditStore::Open(const std::string& path,
                                                                 const SqliteAuditStoreOptions& options) {
  if (IsPostgresUrl(path)) return OpenPostgres(path, options);
  const std::string db_path = IsMemoryPath(path) ? ":memory:" : path;
  Result<std::shared_ptr<Connection>> db =
      Connection::Open(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, options.busy_timeout);
  if (!db) return db.error();
  Connection& c = **db;
  const std::string context = "opening audit database '" + db_path + "'";

  // Small pages: a tick dirties a few pages of several tables, and the WAL
  // write cost follows the bytes written (bench/log/2026-12-02-audit-write-speed.md). Only takes
  // effect on a new file.
  if (Status s = c.Exec("PRAGMA page_size = 1024", "setting the page size"); !s.ok()) {
    return s.error().WithContext(context);
  }
  if (db_path != ":memory:") {
    Result<Query> q = c.Prepare("PRAGMA journal_mode = WAL");
    if (!q) return q.error().WithContext(context);
    Result<bool> row = q->Step("switching to WAL");
    if (!row) return row.error().WithContext(context);
    const std::string mode = *row ? q->Text(0) : "";
    if (mode != "wal") {
      return Error::Config(context + ": the file system refused WAL mode (journal_mode is '" + mode +
                           "'); put the database on a local disk");
    }
  }
  for (const char* pragma :
       {"PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON", "PRAGMA temp_store = MEMORY",
        "PRAGMA wal_autocheckpoint = 8192", "PRAGMA journal_size_limit = 67108864"}) {
    if (Status s = c.Exec(pragma, pragma); !s.ok()) return s.error().WithContext(context);
  }
  if (options.max_size_mib > 0) {
    // PRAGMA takes no bound parameters; the value is an integer, never text.
    Result<Query> page = c.Prepare("PRAGMA page_size");
    if (!page) return page.error().WithContext(context);
    Result<bool> row = page->Step("reading the page size");
    if (!row) return row.error().WithContext(context);
    const int64_t page_bytes = *row && page->Int(0) > 0 ? page->Int(0) : 4096;
    const std::string cap =
        "PRAGMA max_page_count = " + std::to_string(options.max_size_mib * 1024 * 1024 / page_bytes);
    if (Status s = c.Exec(cap.c_str(), "capping the database size"); !s.ok())
      return s.error().WithContext(context);
  }
  if (Status s = store_internal::Migrate(c, store_internal::AuditMigrations()); !s.ok()) {
    return s.error().WithContext(context);
  }
  return std::unique_ptr<SqliteAuditStore>(new SqliteAuditStore(db_path, options, std::move(*db)));
}

Result<std::unique_ptr<SqliteAuditStore>> SqliteAuditStore::OpenPostgres(
    const std::string& url, const SqliteAuditStoreOptions& options) {
  Result<std::shared_ptr<store_internal::PostgresConnection>> db =
      store_internal::PostgresConnection::Connect({.url = url,
                                                   .password = options.password,
                                                   .read_only = false,
                                                   .connect_timeout = std::chrono::seconds(10),
                                                   .lock_timeout = options.busy_timeout});
  if (!db) return db.error();
  if (Status s = store_internal::Migrate(**db, store_internal::AuditMigrations()); !s.ok()) {
    return s.error().WithContext("opening audit database " + RedactDatabaseUrl(url));
  }
  return std::unique_ptr<SqliteAuditStore>(new SqliteAuditStore(url, options, std::move(*db)));
}

}  // namespace gpuscaler
