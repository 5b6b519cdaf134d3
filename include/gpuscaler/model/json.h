// JSON for Snapshots and Plans (the format is documented in docs/snapshot.md),
// plus the human-readable plan report printed by `gpuscaler explain`.
//
// Output is deterministic: keys come in a fixed order (nlohmann::ordered_json,
// insertion order) and doubles print in their shortest round-tripping form,
// so Snapshot -> JSON -> Snapshot -> JSON is byte-identical and the same plan
// always prints the same text. Durations are integer seconds in fields named
// `*_s`; instants are RFC 3339 strings ("2026-07-20T12:00:00Z").
//
// Parsing is strict: unknown fields and wrong types are errors. Each problem
// names the file and the JSON path ("snap.json: pending[3].gpus: expected an
// integer"); all problems found are reported, one per line, as one
// kInvalidInput error. Optional fields take the defaults of the C++ structs.
// All functions are pure and thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

using Json = nlohmann::ordered_json;

inline constexpr const char* kSnapshotKind = "Snapshot";

Json ToJson(const Offering& offering);
Json ToJson(const DemandUnit& unit);
Json ToJson(const Node& node);
Json ToJson(const Snapshot& snapshot);
// Plan JSON: "predicted_cost_usd_per_hour" (= cost_after_usd_per_hour),
// "cost_before_usd_per_hour", "expected_interruption_usd_per_hour", "summary",
// then "launches", "terminations", "placements", "unplaced" (reasons as
// strings such as "budget").
Json ToJson(const Plan& plan);
// The same JSON on one line, written without building a document: the
// audit store's plan_json, on every decision (see model/json_writer.h).
std::string FormatPlanJsonLine(const Plan& plan);

// Pretty-printed (2-space indent) with a trailing newline.
std::string FormatSnapshotJson(const Snapshot& snapshot);
std::string FormatPlanJson(const Plan& plan);
// The snapshot on one line, written without building a document (the same
// text as ToJson(snapshot).dump()): the audit store's record of what each
// decision's planner saw, read back by ParseSnapshotJson.
// `buffer`'s capacity is reused (a 10k-unit snapshot is megabytes).
std::string FormatSnapshotJsonLine(const Snapshot& snapshot, std::string buffer = {});

// Parses a snapshot. `file_name` is used in error messages only. Nodes whose
// offering gives no (or a zero) "usd_per_hour" get the matching entry (by Offering::Key)
// of the snapshot's offerings, see FillNodeOfferings.
Result<Snapshot> ParseSnapshotJson(const std::string& text, const std::string& file_name);
// Reads and parses a snapshot file; an unreadable file is kNotFound.
Result<Snapshot> LoadSnapshotFile(const std::string& path);

// Adds the catalog's GPU models, instance types and offerings (in the listed
// regions; empty: all) to `snapshot`, skipping any it already has (by name,
// or by Offering::Key for offerings), then calls FillNodeOfferings.
void AddCatalog(const Catalog& catalog, const std::vector<std::string>& regions, Snapshot* snapshot);

// For every node whose offering has no price (usd_per_hour == 0), copies the
// snapshot offering with the same Key(), if any.
void FillNodeOfferings(Snapshot* snapshot);

// The report `gpuscaler explain` prints: each launch (count, offering, price,
// reason), each termination, unplaced units grouped by reason, and the costs
// before and after plus the expected interruption cost. Ends with a newline.
std::string FormatPlanText(const Plan& plan, const Snapshot& snapshot);

// The fleet's hourly cost after the plan's actions: cost before + its
// launches - its terminations' prices, never below 0 (the planner's rule).
double PlannedCostAfter(const Plan& plan);

// A decision's one-line summary, rendered only from `plan` (so it cannot
// contradict the plan it summarises): units placed of `pending_units`,
// nodes launched and terminated (the actions' counts), cost before and
// after, expected interruption cost, unplaced units by reason, then
// plan.notes.
std::string SummarizePlan(const Plan& plan, size_t pending_units);

}  // namespace gpuscaler
