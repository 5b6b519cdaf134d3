// Decision inputs: what the planner saw at each decision, so that a decision
// can be replayed after the fact (`gpuscaler explain --db F --decision ID`,
// the daemon's /decisions/ID).
//
// Per decision (table decision_inputs, docs/audit-schema.md): the Snapshot
// passed to the planner, as FormatSnapshotJsonLine text compressed with zstd,
// and, when the governor edited the plan before it was recorded, the
// planner's own plan. The policy the planner was given is kept once per
// content hash (table policies; the store hashes it itself) as a JSON policy file that ParsePolicy reads back to a policy of
// the same hash. SqliteAuditStore::RecordDecision writes them from the
// DecisionRecord's input fields; DecisionInputReader reads them.
//
// Thread-safety: the free functions are pure; a DecisionInputReader is used
// like its AuditReader (one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler {

// The policy as a JSON policy file: every field, defaults included, so that
// ParsePolicy gives back a policy with the same content_hash (no catalog is
// needed to read it). Keys in the order of docs/policy.md.
std::string PolicyFileJson(const Policy& policy);

// zstd at level 1: a 10k-unit snapshot (3.5 MB of JSON) compresses to
// ~40 KB in ~2 ms. `buffer`'s capacity is reused. kInternal if zstd fails.
Result<std::string> CompressSnapshotText(std::string_view text, std::string buffer = {});
// The inverse; `expected_bytes` is the stored uncompressed length. Corrupt
// or truncated data: kInternal naming the decision.
Result<std::string> DecompressSnapshotText(std::string_view compressed, int64_t expected_bytes,
                                           int64_t decision_id);

struct StoredDecisionInput {
  int64_t decision_id = 0;
  std::string snapshot_json;      // FormatSnapshotJsonLine text, as the planner saw it
  // The content hash of the policy the planner was given (policies.hash).
  // Usually decisions.policy_hash; they differ when the caller edited a
  // loaded policy without rehashing it (simulator baselines).
  std::string policy_hash;
  std::string policy_json;        // PolicyFileJson of that policy
  // The planner's plan before the governor; nullopt: equal to the decision's
  // plan_json (the governor changed nothing).
  std::optional<std::string> planner_plan_json;
};

class DecisionInputReader {
 public:
  // `reader` must outlive this object.
  explicit DecisionInputReader(AuditReader& reader) : reader_(reader) {}

  // The stored input of decision `id`. kNotFound with a message saying why:
  // no such decision (the message gives the range of decision ids stored), or
  // a decision recorded without its input (written before inputs were
  // stored, or by a planner that cannot be replayed, e.g. a simulator
  // baseline); kInternal if its policy is missing or the data is corrupt.
  Result<StoredDecisionInput> Read(int64_t id);
  // The smallest and largest decision id stored; nullopt when there is none.
  Result<std::optional<std::pair<int64_t, int64_t>>> DecisionIdRange();

 private:
  AuditReader& reader_;
};

}  // namespace gpuscaler
