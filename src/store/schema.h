// The audit schema as an ordered list of migrations, and the code that brings
// a database up to date. docs/audit-schema.md describes the result.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gpuscaler/status.h"
#include "db.h"

namespace gpuscaler::store_internal {

// "gpsc" in ASCII: PRAGMA application_id of every audit database, so a
// foreign SQLite file is recognised and refused.
inline constexpr int kApplicationId = 0x67707363;

struct Migration {
  int version;               // 1, 2, 3, ... in order, no gaps
  std::string_view description;
  const char* sql;           // constant DDL, run in one transaction with the version row
  // True when readers accept files not yet migrated through this version:
  // it changes only indexes (reads are the same), or only adds what readers
  // check the file's version for and read as not recorded when it is older.
  // So upgrading the report binary first needs no daemon restart.
  bool older_readable = false;
};

// The migrations of this binary, oldest first.
std::span<const Migration> AuditMigrations();

// The oldest schema version a reader of this binary reads: the latest,
// less the trailing migrations marked older_readable.
int OldestReadableSchemaVersion();

// Why the database is not an audit database (tables but no schema_version,
// or another application's id); none for an audit database or an empty one.
Result<std::optional<std::string>> WhyNotAnAuditDatabase(Connection& db);

// The version recorded in the database: 0 for a fresh (empty) database.
// kConfig if the file holds tables but is not an audit database.
Result<int> ReadSchemaVersion(Connection& db);

// Applies the migrations newer than the database's version, in order, each
// in its own transaction. kConfig if the database is newer than the last
// migration known (never downgraded) or not an audit database.
Status Migrate(Connection& db, std::span<const Migration> migrations);

}  // namespace gpuscaler::store_internal
