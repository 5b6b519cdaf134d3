// `gpuscaler db copy --from SRC --to DST`: copies an audit store, every table,
// from a SQLite file into PostgreSQL (or back; store/copy.h).
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "gpuscaler/store/copy.h"
#include "gpuscaler/store/database_url.h"

namespace gpuscaler::cli {

void RegisterDbCommand(CLI::App& app, int* exit_code) {
  CLI::App* db = app.add_subcommand("db", "Audit database tools");
  db->require_subcommand(1);
  CLI::App* copy = db->add_subcommand(
      "copy",
      "Copy an audit store into another, every table in one transaction: a SQLite file into PostgreSQL "
      "(postgresql://user@host:port/dbname?sslmode=verify-full; password from PGPASSWORD or PGPASSFILE) or "
      "back. "
      "Several clusters' stores may be copied into one database: their runs stay apart (report --run selects "
      "one); copying the same store twice is refused");
  auto from = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  copy->add_option("--from", *from, "The audit store to copy: a SQLite file or a postgresql:// URL")
      ->required();
  copy->add_option("--to", *to, "Where to: a postgresql:// URL or a SQLite file (created if missing)")
      ->required();
  copy->callback([from, to, exit_code] {
    Result<CopySummary> copied = CopyAuditStore(*from, *to);
    if (!copied) {
      std::cerr << "gpuscaler db copy: " << copied.error().message() << "\n";
      *exit_code = copied.error().category() == ErrorCategory::kTransient ? 75 : 1;
      return;
    }
    int64_t total = 0;
    for (const auto& [table, rows] : copied->rows) total += rows;
    std::cout << "copied " << total << " rows from " << RedactDatabaseUrl(*from) << " to "
              << RedactDatabaseUrl(*to) << ":";
    for (const auto& [table, rows] : copied->rows) std::cout << " " << table << " " << rows << ";";
    std::cout << "\n";
    *exit_code = 0;
  });
}

}  // namespace gpuscaler::cli
