// `gpuscaler explain`: replays one planning decision and shows why.
//   --snapshot S.json [--policy P] [--catalog C] [--region R]... [--format text|json]:
//     from a saved snapshot (docs/snapshot.md);
//   --db FILE --decision ID [--policy P] [--format text|json]:
//     from the input the audit store kept for decision ID (the planner's
//     snapshot and policy); with --policy, what that policy would have done.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuscaler/daemon/decision_replay.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/solver/planner.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::cli {
namespace {

struct ExplainOptions {
  std::string snapshot_file;
  std::string db_file;
  int64_t decision_id = 0;
  std::string policy_file;
  std::string catalog_file;
  std::vector<std::string> regions;
  std::string format = "text";
};

std::optional<Policy> LoadPolicyOption(const ExplainOptions& options, const Catalog* catalog) {
  if (options.policy_file.empty()) return DefaultPolicy();
  PolicyLoadResult loaded = LoadPolicyFile(options.policy_file, catalog);
  if (!loaded.ok()) {
    for (const ConfigProblem& p : loaded.problems) std::cerr << p.ToString() << "\n";
    return std::nullopt;
  }
  return std::move(loaded.policy);
}

int ExplainSnapshot(const ExplainOptions& options) {
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

  const std::optional<Policy> policy = LoadPolicyOption(options, catalog ? &*catalog : nullptr);
  if (!policy) return 2;

  const Plan plan = MakePlan(*snapshot, *policy);
  if (options.format == "json") {
    std::cout << FormatPlanJson(plan);
  } else {
    std::cout << "Policy: " << (options.policy_file.empty() ? std::string("(built-in default)") : options.policy_file)
              << "\n";
    std::cout << FormatPlanText(plan, *snapshot);
  }
  return 0;
}

// Exit 0 when the replay with the recorded policy reproduces the planner's
// plan (always 0 with --policy); 1 when it does not (the planner is no
// longer the one that made the decision); 2 for bad input.
int ExplainDecision(const ExplainOptions& options) {
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(options.db_file);
  if (!reader) {
    std::cerr << "gpuscaler explain: " << reader.error().message() << "\n";
    return 2;
  }
  std::optional<Policy> other;
  if (!options.policy_file.empty()) {
    other = LoadPolicyOption(options, nullptr);
    if (!other) return 2;
  }
  Result<DecisionReplay> replay = ReplayDecision(**reader, options.decision_id, other ? &*other : nullptr);
  if (!replay) {
    std::cerr << "gpuscaler explain: " << options.db_file << ": " << replay.error().message() << "\n";
    return replay.error().category() == ErrorCategory::kInternal ? 1 : 2;
  }
  const DecisionRecord& d = replay->decision.decision;
  if (options.format == "json") {
    std::cout << FormatPlanJson(replay->plan);
  } else {
    std::cout << "Decision " << replay->decision.id << " at " << FormatRfc3339(d.time) << " (" << d.source << ")\n";
    if (replay->recorded_policy) {
      std::cout << "Policy: " << replay->policy.name << " " << replay->policy.content_hash.substr(0, 12)
                << " (as recorded)\n";
    } else {
      std::cout << "Policy: " << options.policy_file << " " << replay->policy.content_hash.substr(0, 12)
                << " (what-if; the decision used " << d.policy_name << ")\n";
    }
    if (replay->governor_edited) {
      std::cout << "The governor edited this plan before it was acted on; recorded after it: " << d.summary << "\n";
    }
    std::cout << FormatPlanText(replay->plan, replay->snapshot);
  }
  if (replay->recorded_policy && !replay->matches_recorded) {
    std::cerr << "gpuscaler explain: decision " << replay->decision.id
              << ": the replayed plan differs from the recorded one (this gpuscaler plans differently from "
                 "the one that made the decision)\n";
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterExplainCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* explain = app.add_subcommand(
      "explain",
      "Show the plan a policy makes for a snapshot, or replay a recorded decision, and why: launches, "
      "terminations, unplaced work by reason, and the cost before and after (docs/snapshot.md)");
  CLI::Option* snapshot = explain->add_option("--snapshot", options->snapshot_file, "Snapshot JSON file");
  CLI::Option* db = explain->add_option("--db", options->db_file, "Audit database with the decision: a SQLite file or a postgresql:// URL");
  CLI::Option* decision = explain->add_option("--decision", options->decision_id,
                                              "With --db: the decision id to replay (its stored snapshot and policy)");
  snapshot->excludes(db)->excludes(decision);
  db->needs(decision);
  decision->needs(db);
  explain->add_option("--policy", options->policy_file,
                      "Policy file (YAML or JSON); default: the built-in default policy (--snapshot) or the "
                      "decision's recorded policy (--db; another policy shows what it would have done)");
  explain->add_option("--catalog", options->catalog_file,
                      "Instance catalog (e.g. config/catalogs/aws.yaml): prices the offerings when "
                      "the snapshot has none, and checks the policy against it");
  explain->add_option("--region", options->regions,
                      "With --catalog: only offerings in this region (repeatable); default: all");
  explain->add_option("--format", options->format, "Output: text (a report) or json (the plan)")
      ->check(CLI::IsMember({"text", "json"}));
  explain->callback([options, exit_code, snapshot, db] {
    if (snapshot->count() == 0 && db->count() == 0) {
      std::cerr << "gpuscaler explain: give --snapshot FILE, or --db FILE --decision ID\n";
      *exit_code = 2;
      return;
    }
    *exit_code = db->count() > 0 ? ExplainDecision(*options) : ExplainSnapshot(*options);
  });
}

}  // namespace gpuscaler::cli
