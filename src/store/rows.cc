#include "rows.h"

#include <iterator>
#include <nlohmann/json.hpp>

namespace gpuscaler {

std::string_view ToString(ActionKind k) { return k == ActionKind::kTerminate ? "terminate" : "launch"; }

std::string_view ToString(ActionOutcome o) {
  static constexpr std::string_view kNames[] = {"pending", "succeeded", "partial", "failed"};  // enum order
  const auto i = static_cast<size_t>(o);
  return i < std::size(kNames) ? kNames[i] : kNames[0];
}

std::optional<ActionKind> ParseActionKind(std::string_view text) {
  if (text == "launch") return ActionKind::kLaunch;
  if (text == "terminate") return ActionKind::kTerminate;
  return std::nullopt;
}

std::optional<ActionOutcome> ParseActionOutcome(std::string_view text) {
  for (ActionOutcome o :
       {ActionOutcome::kPending, ActionOutcome::kSucceeded, ActionOutcome::kPartial, ActionOutcome::kFailed}) {
    if (text == ToString(o)) return o;
  }
  return std::nullopt;
}

namespace store_internal {

std::string IdsToJson(const std::vector<std::string>& ids) { return nlohmann::json(ids).dump(); }

Result<std::vector<std::string>> IdsFromJson(const std::string& text, std::string_view column) {
  try {
    return nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Error::Internal(std::string(column) + " is not a JSON array of strings: " + e.what());
  }
}

void BindOffering(Query& q, int first, const Offering& o) {
  // An instance in a reservation is bought on-demand (EC2 lists it so, with
  // its reservation beside): the tables keep the purchase option; the
  // decision's plan_json names the reservation.
  const std::string_view capacity =
      o.capacity_type == CapacityType::kReserved ? ToString(CapacityType::kOnDemand) : ToString(o.capacity_type);
  q.BindFrom(first, o.instance_type, o.region, o.zone, capacity, o.usd_per_hour, o.on_demand_usd_per_hour,
             o.interruptions_per_hour);
}

Status ReadOffering(const Query& q, int first, std::string_view table, Offering* out) {
  Offering& o = *out;
  o.instance_type = q.Text(first);
  o.region = q.Text(first + 1);
  o.zone = q.Text(first + 2);
  std::optional<CapacityType> capacity = ParseCapacityType(q.Text(first + 3));
  if (!capacity)
    return Error::Internal(std::string(table) + ".capacity_type '" + q.Text(first + 3) + "' unknown");
  o.capacity_type = *capacity;
  o.usd_per_hour = q.Real(first + 4);
  o.on_demand_usd_per_hour = q.Real(first + 5);
  o.interruptions_per_hour = q.Real(first + 6);
  return Status::Ok();
}

namespace {

// decision_id 0 (no decision) is NULL in the tables.
std::optional<int64_t> DecisionId(int64_t id) { return id == 0 ? std::nullopt : std::optional<int64_t>(id); }

}  // namespace

Query& BindActionIntent(Query& q, const ActionRecord& a) {
  q.BindFrom(1, DecisionId(a.decision_id), ToString(a.kind), a.idempotency_token, a.pool);
  BindOffering(q, 5, a.offering);
  return q.BindFrom(12, a.count, IdsToJson(a.instance_ids), a.reason);
}

Result<ActionRow> ReadActionRow(const Query& q) {
  ActionRow row;
  row.id = q.Int(0);
  ActionRecord& a = row.action;
  a.decision_id = q.IsNull(1) ? 0 : q.Int(1);
  std::optional<ActionKind> kind = ParseActionKind(q.Text(2));
  if (!kind) return Error::Internal("actions.kind '" + q.Text(2) + "' unknown");
  a.kind = *kind;
  a.idempotency_token = q.Text(3);
  a.pool = q.Text(4);
  if (Status s = ReadOffering(q, 5, "actions", &a.offering); !s.ok()) return s.error();
  a.count = static_cast<int>(q.Int(12));
  Result<std::vector<std::string>> ids = IdsFromJson(q.Text(13), "actions.instance_ids_json");
  if (!ids) return ids.error();
  a.instance_ids = std::move(*ids);
  a.reason = q.Text(14);
  std::optional<ActionOutcome> outcome = ParseActionOutcome(q.Text(15));
  if (!outcome) return Error::Internal("actions.outcome '" + q.Text(15) + "' unknown");
  row.outcome = *outcome;
  row.detail = q.Text(16);
  Result<std::vector<std::string>> result_ids = IdsFromJson(q.Text(17), "actions.result_instance_ids_json");
  if (!result_ids) return result_ids.error();
  row.result_instance_ids = std::move(*result_ids);
  return row;
}

Query& BindNodeLaunch(Query& q, const NodeLaunchRecord& n) {
  q.BindFrom(1, n.instance_id, n.node_id, n.pool);
  BindOffering(q, 4, n.offering);
  const std::optional<std::string> reservation =
      n.offering.reservation_id.empty() ? std::nullopt : std::optional<std::string>(n.offering.reservation_id);
  return q.BindFrom(11, n.gpu_count, n.launch_time, DecisionId(n.decision_id), n.reason, reservation);
}

Result<NodeRow> ReadNodeRow(const Query& q) {
  NodeRow row;
  NodeLaunchRecord& n = row.launch;
  n.instance_id = q.Text(0);
  n.node_id = q.Text(1);
  n.pool = q.Text(2);
  if (Status s = ReadOffering(q, 3, "nodes", &n.offering); !s.ok()) return s.error();
  n.gpu_count = static_cast<int>(q.Int(10));
  n.launch_time = q.Time(11);
  n.decision_id = q.IsNull(12) ? 0 : q.Int(12);
  n.reason = q.Text(13);
  row.end_time = q.OptionalTime(14);
  row.cause = q.Text(15);
  row.run_id = q.IsNull(16) ? 0 : q.Int(16);
  if (!q.IsNull(17)) {
    n.offering.reservation_id = q.Text(17);
    n.offering.capacity_type = CapacityType::kReserved;
  }
  return row;
}

Query& BindReservation(Query& q, int64_t run_id, const ReservationRecord& r, WallTime first_seen) {
  const Reservation& res = r.reservation;
  q.BindFrom(1, run_id, res.id, first_seen, std::optional<WallTime>(), res.instance_type, res.region, res.zone,
             ToString(res.kind), res.total_count, res.start, res.end, res.usd_per_hour, res.upfront_usd,
             nlohmann::json(res.tags).dump(), nlohmann::json(r.pools).dump());
  return q;
}

Result<ReservationRow> ReadReservationRow(const Query& q) {
  ReservationRow row;
  row.run_id = q.Int(0);
  Reservation& res = row.record.reservation;
  res.id = q.Text(1);
  row.first_seen = q.Time(2);
  row.last_seen = q.OptionalTime(3);
  res.instance_type = q.Text(4);
  res.region = q.Text(5);
  res.zone = q.Text(6);
  std::optional<ReservationKind> kind = ParseReservationKind(q.Text(7));
  if (!kind) return Error::Internal("reservations.kind '" + q.Text(7) + "' unknown");
  res.kind = *kind;
  res.total_count = static_cast<int>(q.Int(8));
  res.start = q.Time(9);
  res.end = q.OptionalTime(10);
  res.usd_per_hour = q.Real(11);
  res.upfront_usd = q.Real(12);
  try {
    res.tags = nlohmann::json::parse(q.TextView(13)).get<std::map<std::string, std::string>>();
    row.record.pools = nlohmann::json::parse(q.TextView(14)).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Error::Internal("reservation '" + res.id + "': its tags or pools are not the JSON recorded: " + e.what());
  }
  return row;
}

Query& BindPriceSample(Query& q, const PriceSample& p) {
  q.Bind(1, p.time).Bind(9, p.offering.available);
  BindOffering(q, 2, p.offering);
  return q;
}

Result<PriceSample> ReadPriceSample(const Query& q) {
  PriceSample sample;
  sample.time = q.Time(0);
  if (Status s = ReadOffering(q, 1, "price_samples", &sample.offering); !s.ok()) return s.error();
  sample.offering.available = q.Int(8) != 0;
  return sample;
}

Result<RunRow> ReadRunRow(const Query& q) {
  RunRow row;
  row.id = q.Int(0);
  row.run.name = q.Text(1);
  row.run.source = q.Text(2);
  row.run.policy_hash = q.Text(3);
  row.run.started = q.Time(4);
  row.ended = q.OptionalTime(5);
  row.cloud.name = q.Text(6);
  try {
    if (!q.IsNull(7)) {
      row.cloud.instance_tags = nlohmann::json::parse(q.TextView(7)).get<std::map<std::string, std::string>>();
    }
    if (!q.IsNull(8)) {
      row.cloud.pool_tags = nlohmann::json::parse(q.TextView(8))
                                .get<std::map<std::string, std::map<std::string, std::string>>>();
    }
  } catch (const nlohmann::json::exception& e) {
    return Error::Internal("run " + std::to_string(row.id) + ": its tags are not a JSON object of strings: " +
                           e.what());
  }
  return row;
}

std::string TagsToJson(const std::map<std::string, std::string>& tags) {
  return tags.empty() ? std::string() : nlohmann::json(tags).dump();
}

std::string PoolTagsToJson(const std::map<std::string, std::map<std::string, std::string>>& tags) {
  return tags.empty() ? std::string() : nlohmann::json(tags).dump();
}

Result<std::vector<ActionRow>> QueryOpenIntents(Connection& db) {
  return Select<ActionRow>(db,
                           "SELECT " GPUSCALER_ACTION_COLUMNS
                           ", (SELECT d.time FROM decisions d WHERE d.id = actions.decision_id)"
                           " FROM actions WHERE outcome = 'pending' ORDER BY id",
                           "reading open intents", [](const Query& q) -> Result<ActionRow> {
                             Result<ActionRow> row = ReadActionRow(q);
                             if (row) row->decision_time = q.OptionalTime(18);
                             return row;
                           });
}

}  // namespace store_internal
}  // namespace gpuscaler
