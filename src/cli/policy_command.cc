// `gpuscaler policy check FILE... [--catalog FILE] [--region R]...`.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/loader.h"

namespace gpuscaler::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> files;
  std::string catalog_file;
  std::vector<std::string> regions;
};

int RunCheck(const CheckOptions& options) {
  std::optional<Catalog> catalog;
  PolicyLoadOptions load;
  load.regions = options.regions;
  if (!options.catalog_file.empty()) {
    Result<Catalog> loaded = LoadCatalogFile(options.catalog_file);
    if (!loaded) {
      std::cerr << loaded.error().message() << "\n";
      std::cerr << "gpuscaler policy check: the catalog " << options.catalog_file
                << " is invalid; no policy was checked\n";
      return 2;
    }
    catalog = std::move(loaded).value();
    load.catalog = &*catalog;
  }
  int exit_code = 0;
  for (const std::string& file : options.files) {
    const PolicyLoadResult result = LoadPolicyFile(file, load);
    if (!result.ok()) {
      for (const ConfigProblem& p : result.problems) std::cerr << p.ToString() << "\n";
      exit_code = 2;
      continue;
    }
    std::cout << "ok  " << file << " (" << result.policy.pools.size() << " pools, "
              << result.policy.classes.size() << " classes, hash "
              << result.policy.content_hash.substr(0, 8) << ")\n";
  }
  return exit_code;
}

}  // namespace

void RegisterPolicyCommand(CLI::App& app, int* exit_code) {
  CLI::App* policy = app.add_subcommand("policy", "Work with policy files");
  policy->require_subcommand(1);
  auto options = std::make_shared<CheckOptions>();
  CLI::App* check = policy->add_subcommand(
      "check",
      "Validate policy files (YAML or JSON); print every problem as file:line:col: field: "
      "message. Exit 0 when all are valid, 2 otherwise");
  check->add_option("files", options->files, "Policy files to check")->required();
  check->add_option("--catalog", options->catalog_file,
                    "Instance catalog (e.g. config/catalogs/aws.yaml): also check instance "
                    "types, families, GPU models and zones against it");
  check->add_option("--region", options->regions,
                    "A cloud region the installation serves (repeatable): a pool whose regions or "
                    "zones fall outside them is an error")
      ->allow_extra_args(false);  // one region per flag: the files stay positional
  check->callback([options, exit_code] { *exit_code = RunCheck(*options); });
}

}  // namespace gpuscaler::cli
