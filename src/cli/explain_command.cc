// `gpuscaler explain --snapshot S.json [--policy P] [--catalog C] [--region R]... [--format text|json]`:
// replays one planning decision from a saved snapshot (docs/snapshot.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler::cli {
namespace {

struct ExplainOptions {
  std::string snapshot_file;
  std::string policy_file;
  std::string catalog_file;
  std::vector<std::string> regions;
  std::string format = "text";
};

int RunExplain(const ExplainOptions& options) {
  Result<Snapshot> snapshot = LoadSnapshotFile(options.snapshot_file);
  if (!snapshot) {
    std::cerr << snapshot.error().message() << "\n";
    return 2;
  }

  std::optional<Catalog> catalog;
  if (!options.catalog_file.empty()) {
    Result<Catalog> loaded = LoadCatalogFile(options.catalog_file);
    if (!loaded) {
      std::cerr << loaded.error().message() << "\n";
      return 2;
    }
    catalog = std::move(loaded).value();
    // A snapshot that carries its own offerings is replayed exactly as taken.
    if (snapshot->offerings.empty()) AddCatalog(*catalog, options.regions, &*snapshot);
  }
  if (snapshot->offerings.empty()) {
    std::cerr << "gpuscaler explain: warning: " << options.snapshot_file
              << " has no offerings; pass --catalog to price new nodes from a catalog\n";
  }

  Policy policy = DefaultPolicy();
  if (!options.policy_file.empty()) {
    PolicyLoadResult loaded = LoadPolicyFile(options.policy_file, catalog ? &*catalog : nullptr);
    if (!loaded.ok()) {
      for (const ConfigProblem& p : loaded.problems) std::cerr << p.ToString() << "\n";
      return 2;
    }
    policy = std::move(loaded.policy);
  }

  const Plan plan = MakePlan(*snapshot, policy);
  if (options.format == "json") {
    std::cout << FormatPlanJson(plan);
  } else {
    std::cout << "Policy: " << (options.policy_file.empty() ? std::string("(built-in default)") : options.policy_file)
              << "\n";
    std::cout << FormatPlanText(plan, *snapshot);
  }
  return 0;
}

}  // namespace

void RegisterExplainCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* explain = app.add_subcommand(
      "explain",
      "Show the plan a policy makes for a snapshot, and why: launches, terminations, unplaced "
      "work by reason, and the cost before and after (snapshot format: docs/snapshot.md)");
  explain->add_option("--snapshot", options->snapshot_file, "Snapshot JSON file")->required();
  explain->add_option("--policy", options->policy_file,
                      "Policy file (YAML or JSON); default: the built-in default policy");
  explain->add_option("--catalog", options->catalog_file,
                      "Instance catalog (e.g. config/catalogs/aws.yaml): prices the offerings when "
                      "the snapshot has none, and checks the policy against it");
  explain->add_option("--region", options->regions,
                      "With --catalog: only offerings in this region (repeatable); default: all");
  explain->add_option("--format", options->format, "Output: text (a report) or json (the plan)")
      ->check(CLI::IsMember({"text", "json"}));
  explain->callback([options, exit_code] { *exit_code = RunExplain(*options); });
}

}  // namespace gpuscaler::cli
