// Where an audit store lives, as a user writes it (`db:` in the daemon's
// config, `--db` on the command line): a SQLite file path, ":memory:", or a
// PostgreSQL URL (postgresql://user@host:port/dbname?sslmode=verify-full,
// or postgres://…, libpq's URI form with all its parameters).
#pragma once

#include <string>
#include <string_view>

namespace gpuscaler {

// True for postgresql:// and postgres:// URLs.
bool IsPostgresUrl(std::string_view db);

// `db` fit for a log line or an error: a URL's password (user:password@ or
// a password= parameter) is replaced by "***". A path comes back as is.
std::string RedactDatabaseUrl(std::string_view db);

}  // namespace gpuscaler
