// Where the audit store's two SQL dialects differ, in one place. The store
// writes its SQL once, in SQLite's syntax restricted to what PostgreSQL also
// runs (ON CONFLICT upserts, RETURNING, CASE instead of scalar max), and
// these functions render it for PostgreSQL. SQLite runs it as written.
//
// One rule of that subset: PostgreSQL infers each parameter's type from its
// first use, so a parameter that may be NULL is compared to a column before
// it is tested for NULL ("run_id = ?3 OR ?3 IS NULL", not the other way).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuscaler::store_internal {

// A statement for PostgreSQL: parameters ?N become $M (outside quotes),
// numbered densely in order of first use (PostgreSQL must infer a type for
// every number up to the highest, and the store leaves gaps: ?90 for run_id),
// and the few SQLite-only spellings the store uses become PostgreSQL's
// ("BEGIN IMMEDIATE", a read's "BEGIN", SQLite's planner hints, the clock).
// `parameters`, when given, gets for each N the M it became (0: unused).
std::string PostgresSql(std::string_view sqlite_sql, std::vector<int>* parameters = nullptr);

// Schema (DDL) for PostgreSQL, on top of PostgreSQL's statement rendering:
// INTEGER is 64-bit (BIGINT), REAL is DOUBLE PRECISION, BLOB is BYTEA, an
// AUTOINCREMENT key an identity column, TEXT compares bytewise (COLLATE "C",
// as SQLite's default BINARY: reports order rows the same on both), and
// WITHOUT ROWID goes (every PostgreSQL table is a heap).
std::string PostgresSchema(std::string_view sqlite_ddl);

}  // namespace gpuscaler::store_internal
