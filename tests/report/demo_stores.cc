#include "report/demo_stores.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>

#include "gpuscaler/model/builtin_catalog.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/runner.h"

namespace gpuscaler::report::testing {
namespace {

namespace fs = std::filesystem;

// A database file and what SQLite keeps beside it: a journal or WAL left
// next to a new file would be read as part of it.
void RemoveDatabase(const std::string& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ignored);
}

Result<uint64_t> DemoStoreSeed(const std::string& cluster) {
  if (cluster == "east") return uint64_t{3};
  if (cluster == "west") return uint64_t{4};
  return Error::NotFound("no demo store '" + cluster + "' (there are east and west)");
}

}  // namespace

Result<sim::Scenario> DemoStoreScenario(const std::string& cluster) {
  Result<uint64_t> seed = DemoStoreSeed(cluster);
  if (!seed) return seed.error();
  std::string catalog_source;
  const Catalog catalog = DefaultCatalog(GPUSCALER_SOURCE_DIR, &catalog_source);
  return sim::MakeBuiltinScenario("demo", *seed, kDemoStoreDays, catalog);
}

Status WriteDemoStore(const std::string& cluster, const std::string& path) {
  Result<sim::Scenario> scenario = DemoStoreScenario(cluster);
  if (!scenario) return scenario.error();
  Result<sim::RunSpec> spec = sim::MakeRunSpec("gpuscaler", *scenario, nullptr);
  if (!spec) return spec.error();
  const std::string partial = path + ".partial";
  RemoveDatabase(partial);
  {
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(partial);
    if (!store) return store.error();
    sim::RunOptions options;
    options.store = store->get();
    const sim::RunResult run = sim::RunScenario(*scenario, *spec, options);
    if (run.controller_errors != 0) {
      return Error::Internal("the demo replay of '" + cluster + "' had " + std::to_string(run.controller_errors) +
                             " controller errors");
    }
    if (Status flushed = (*store)->Flush(); !flushed) return flushed;
  }  // closed: everything is in the main file
  RemoveDatabase(path);
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) return Error::Internal("renaming " + partial + " to " + path + ": " + ec.message());
  return Status::Ok();
}

Result<std::string> DemoStore(const std::string& cluster, const std::string& scratch_dir) {
  const std::string file = cluster + ".db";
  if (const char* shared = std::getenv(kDemoStoresEnv); shared != nullptr && *shared != '\0') {
    const std::string path = (fs::path(shared) / file).string();
    if (!fs::exists(path)) {
      return Error::NotFound(path + " does not exist (" + kDemoStoresEnv +
                             " names the directory the setup tests report_demo_store_* write)");
    }
    return path;
  }
  const std::string path = (fs::path(scratch_dir) / file).string();
  if (Status written = WriteDemoStore(cluster, path); !written) return written.error();
  return path;
}

}  // namespace gpuscaler::report::testing
