// Where an audit store lives, as a user writes it (`db:` in the daemon's
// config, `--db` on the command line): a SQLite file path, ":memory:", or a
// PostgreSQL URL (postgresql://user@host:port/dbname?sslmode=verify-full,
// or postgres://…, libpq's URI form with all its parameters).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuscaler {

// True for postgresql:// and postgres:// URLs.
bool IsPostgresUrl(std::string_view db);

// `db` fit for a log line or an error: a URL's password (user:password@ or
// a password= parameter) is replaced by "***". A path comes back as is.
std::string RedactDatabaseUrl(std::string_view db);

// The password for PostgreSQL audit databases opened without one of their
// own (the store's and reader's options), process-wide: the daemon sets it
// once at startup from its db_password_file, before any other thread runs.
// nullopt (the default): libpq's own sources (the URL, PGPASSWORD,
// PGPASSFILE).
void SetDefaultDatabasePassword(std::optional<std::string> password);
std::optional<std::string> DefaultDatabasePassword();

}  // namespace gpuscaler
