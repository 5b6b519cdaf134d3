// How records map to the audit tables, shared by the writer and the reader:
// each table's column list (pasted into constant SQL) next to the code that
// binds and reads those columns in that order; enums as the text the
// schema's CHECK constraints allow, id lists as JSON arrays.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/audit_store.h"
#include "db.h"

namespace gpuscaler::store_internal {

std::string IdsToJson(const std::vector<std::string>& ids);
Result<std::vector<std::string>> IdsFromJson(const std::string& text, std::string_view column);

// Binds the fields of `record` named by `fields` (a tuple of member
// pointers) to parameters first, first + 1, ...
template <typename Record, typename... Members>
Query& BindFields(Query& q, int first, const Record& record, const std::tuple<Members...>& fields) {
  return std::apply([&](auto... member) -> Query& { return q.BindFrom(first, record.*member...); }, fields);
}

// Reads columns first, first + 1, ... into the fields of `*record` named by
// `fields`.
template <typename Record, typename... Members>
void ReadFields(const Query& q, int first, const std::tuple<Members...>& fields, Record* record) {
  std::apply([&](auto... member) { (q.Get(first++, &(record->*member)), ...); }, fields);
}

// Prepares `sql`, binds `params` to ?1, ?2, ... and returns read(q), a
// Result<Row>, for every row.
template <typename Row, typename Read, typename... Params>
Result<std::vector<Row>> Select(Connection& db, const char* sql, std::string_view what, Read&& read,
                                const Params&... params) {
  Result<Query> q = db.Prepare(sql);
  if (!q) return q.error();
  q->BindFrom(1, params...);
  std::vector<Row> rows;
  while (true) {
    Result<bool> more = q->Step(what);
    if (!more) return more.error();
    if (!*more) return rows;
    Result<Row> row = read(*q);
    if (!row) return row.error();
    rows.push_back(std::move(*row));
  }
}

// decisions: the columns after id and, in their order, the fields they hold.
#define GPUSCALER_DECISION_COLUMNS                                                                      \
  "time, source, policy_name, policy_hash, pending_units, nodes, signals_json, snapshot_summary_json, " \
  "plan_json, summary, cost_before_usd_per_hour, cost_after_usd_per_hour, "                             \
  "expected_interruption_usd_per_hour, scale_down_blocked"
inline constexpr auto kDecisionFields =
    std::make_tuple(&DecisionRecord::time, &DecisionRecord::source, &DecisionRecord::policy_name,
                    &DecisionRecord::policy_hash, &DecisionRecord::pending_units, &DecisionRecord::nodes,
                    &DecisionRecord::signals_json, &DecisionRecord::snapshot_summary_json,
                    &DecisionRecord::plan_json, &DecisionRecord::summary,
                    &DecisionRecord::cost_before_usd_per_hour, &DecisionRecord::cost_after_usd_per_hour,
                    &DecisionRecord::expected_interruption_usd_per_hour, &DecisionRecord::scale_down_blocked);

// An Offering in actions, nodes and price_samples; `price` names its price
// column (nodes: the price at launch).
#define GPUSCALER_OFFERING_COLUMNS(price) \
  "instance_type, region, zone, capacity_type, " price ", on_demand_usd_per_hour, interruptions_per_hour"
void BindOffering(Query& q, int first, const Offering& o);
// Reads columns first..first + 6 into *out, leaving `available` as it is. An
// unknown capacity type is kInternal, naming `table`.
Status ReadOffering(const Query& q, int first, std::string_view table, Offering* out);

// actions: the intent's columns, then (ActionRow) the outcome's.
#define GPUSCALER_ACTION_INTENT_COLUMNS                                                       \
  "decision_id, kind, idempotency_token, pool, " GPUSCALER_OFFERING_COLUMNS("usd_per_hour") \
  ", count, instance_ids_json, reason"
#define GPUSCALER_ACTION_COLUMNS \
  "id, " GPUSCALER_ACTION_INTENT_COLUMNS ", outcome, detail, result_instance_ids_json"
Query& BindActionIntent(Query& q, const ActionRecord& a);
Result<ActionRow> ReadActionRow(const Query& q);

// nodes: the launch's columns, then (NodeRow) the end's.
#define GPUSCALER_NODE_LAUNCH_COLUMNS                                                 \
  "instance_id, node_id, pool, " GPUSCALER_OFFERING_COLUMNS("launch_usd_per_hour") \
  ", gpu_count, launch_time, decision_id, reason"
// Binds ?1..?14 (the launch columns) and ?15 (reservation_id, NULL for an
// offering without one).
Query& BindNodeLaunch(Query& q, const NodeLaunchRecord& n);
// A node as the reader selects it: the launch's columns, its end, run and
// reservation (version 7; a reader of an older file selects NULL for it).
#define GPUSCALER_NODE_COLUMNS GPUSCALER_NODE_LAUNCH_COLUMNS ", end_time, cause, run_id, reservation_id"
#define GPUSCALER_NODE_COLUMNS_V6 GPUSCALER_NODE_LAUNCH_COLUMNS ", end_time, cause, run_id, NULL"
// GPUSCALER_NODE_COLUMNS; a node with a reservation reads as capacity type
// reserved with its offering's reservation_id set.
Result<NodeRow> ReadNodeRow(const Query& q);

// price_samples
#define GPUSCALER_PRICE_SAMPLE_COLUMNS "time, " GPUSCALER_OFFERING_COLUMNS("usd_per_hour") ", available"
Query& BindPriceSample(Query& q, const PriceSample& p);
Result<PriceSample> ReadPriceSample(const Query& q);

// usage: the columns and, in their order, the fields they hold (run_id is
// bound after them by the writer).
#define GPUSCALER_USAGE_COLUMNS \
  "instance_id, workload_class, team, start_time, end_time, gpu_seconds_allocated, gpu_seconds_busy"
inline constexpr auto kUsageFields = std::make_tuple(
    &UsageRecord::instance_id, &UsageRecord::workload_class, &UsageRecord::team, &UsageRecord::start,
    &UsageRecord::end, &UsageRecord::gpu_seconds_allocated, &UsageRecord::gpu_seconds_busy);

// The parameter number run_id is bound to in the INSERTs of decisions, nodes
// and usage: far above their other columns' ?1, ?2, ..., so columns added
// to those lists later keep their numbers.
#define GPUSCALER_RUN_ID_PARAM "90"
inline constexpr int kRunIdParam = 90;

// One INSERT of `record`: prepares `sql`, binds the `fields` (BindFields) to
// ?1, ?2, ... and `run_id` to ?kRunIdParam, and runs it.
template <typename Record, typename... Members>
Status InsertWithRunId(Connection& db, const char* sql, const Record& record, const std::tuple<Members...>& fields,
                       std::optional<int64_t> run_id) {
  Result<Query> q = db.Prepare(sql);
  if (!q) return q.error();
  return BindFields(*q, 1, record, fields).Bind(kRunIdParam, run_id).Run("inserting");
}

// Prepares `sql`, an INSERT ... RETURNING id, binds `params` to ?1, ?2, ...,
// runs it and returns the new row's id.
template <typename... Params>
Result<int64_t> InsertReturningId(Connection& db, const char* sql, const Params&... params) {
  Result<Query> q = db.Prepare(sql);
  if (!q) return q.error();
  Result<bool> row = q->BindFrom(1, params...).Step("inserting");
  if (!row) return row.error();
  if (!*row) return Error::Internal("inserting: no id returned");
  return q->Int(0);
}

// runs: version 6 added the cloud and the tags; a reader of an older file
// selects NULL for them (GPUSCALER_RUN_COLUMNS_V5).
#define GPUSCALER_RUN_COLUMNS "id, name, source, policy_hash, started, ended, cloud, instance_tags_json, pool_tags_json"
#define GPUSCALER_RUN_COLUMNS_V5 "id, name, source, policy_hash, started, ended, NULL, NULL, NULL"
// kInternal when a tags column is not the JSON object TagsToJson writes.
Result<RunRow> ReadRunRow(const Query& q);
// Tags as a JSON object of strings, pool tags as an object of such objects;
// "" for none (stored as NULL).
std::string TagsToJson(const std::map<std::string, std::string>& tags);
std::string PoolTagsToJson(const std::map<std::string, std::map<std::string, std::string>>& tags);

// lost_work: the columns and, in their order, the fields they hold (run_id
// is bound after them by the writer).
#define GPUSCALER_LOST_WORK_COLUMNS "instance_id, time, workload_class, team, gpu_seconds"
inline constexpr auto kLostWorkFields =
    std::make_tuple(&LostWorkRecord::instance_id, &LostWorkRecord::time, &LostWorkRecord::workload_class,
                    &LostWorkRecord::team, &LostWorkRecord::gpu_seconds);

// reservations: the columns after run_id and id, in the order
// ReadReservationRow reads them (from column 2).
#define GPUSCALER_RESERVATION_COLUMNS                                                                         \
  "run_id, id, first_seen, last_seen, instance_type, region, zone, kind, total_count, start_time, end_time, " \
  "usd_per_hour, upfront_usd, tags_json, pools_json"
// Binds ?1..?15 in GPUSCALER_RESERVATION_COLUMNS order (last_seen NULL).
Query& BindReservation(Query& q, int64_t run_id, const ReservationRecord& r, WallTime first_seen);
// kInternal for an unknown kind or tags/pools that are not the JSON written.
Result<ReservationRow> ReadReservationRow(const Query& q);

// The writer's and reader's shared queries.
Result<std::vector<ActionRow>> QueryOpenIntents(Connection& db);

}  // namespace gpuscaler::store_internal
