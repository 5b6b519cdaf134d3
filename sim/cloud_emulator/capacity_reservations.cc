// Capacity reservations: On-Demand Capacity Reservations and Capacity
// Blocks for ML, their slots, their states over time, the early end of a
// block, and DescribeCapacityReservations.
#include <algorithm>

#include "gpuscaler/cloud/capacity_reservation_api.h"
#include "gpuscaler/model/reservation.h"
#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

bool IsBlock(const ScriptedCapacityReservation& r) { return r.type == "capacity-block"; }

// The filters DescribeCapacityReservations takes here (besides tag:<key> and
// tag-key).
bool IsReservationFilter(const std::string& name) {
  static const char* kNames[] = {
      "instance-type", "availability-zone", "state",   "instance-match-criteria", "reservation-type",
      "end-date-type", "owner-id",          "tenancy", "instance-platform"};
  return name.rfind("tag:", 0) == 0 || name == "tag-key" ||
         std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; });
}

}  // namespace

const ScriptedCapacityReservation* CloudEmulator::FindReservation(const std::string& id) const {
  for (const ScriptedCapacityReservation& r : scenario_.capacity_reservations) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

std::string CloudEmulator::ReservationState(const ScriptedCapacityReservation& r, WallTime now) const {
  if (now < r.start) return "scheduled";
  if (r.end && now >= *r.end) return "expired";
  return "active";
}

int CloudEmulator::ReservationInUse(const std::string& id) const {
  int n = 0;
  for (const Instance& i : instances_) {
    if (i.info.capacity_reservation_id == id && (IsLive(i.info) || i.info.state == "shutting-down")) ++n;
  }
  return n;
}

CloudEmulator::SlotRoom CloudEmulator::ReservationRoom(const SlotRequest& r, WallTime now) const {
  SlotRoom out;
  auto refuse = [&](int status, std::string code, std::string message) {
    out.status = status;
    out.code = std::move(code);
    out.message = std::move(message);
    return out;
  };
  auto short_of = [&](std::string code, std::string message) {
    out.room = 0;
    out.code = std::move(code);
    out.message = std::move(message);
    return out;
  };
  if (!r.target.empty() && !r.preference.empty() && r.preference != cloud::kReservationsOnly) {
    return refuse(
        400, "InvalidParameterCombination",
        "CapacityReservationPreference and CapacityReservationTarget can be given together only with the "
        "preference capacity-reservations-only.");
  }
  if (r.capacity_block && r.target.empty()) {
    return refuse(400, "MissingParameter",
                  "A capacity-block launch must target a Capacity Block (CapacityReservationId).");
  }
  if (r.target.empty()) {
    if (r.preference != cloud::kReservationsOnly) return out;  // plain on-demand (open reservations: TakeSlot)
    // Only an open reservation of the type and zone can take it.
    for (const ScriptedCapacityReservation& c : scenario_.capacity_reservations) {
      if (c.match != "open" || IsBlock(c) || c.instance_type != r.type || c.zone != r.zone) continue;
      if (ReservationState(c, now) != "active") continue;
      const int room = std::max(0, c.count - ReservationInUse(c.id));
      if (room > out.room) {
        out.reservation = &c;
        out.room = room;
      }
    }
    if (out.reservation == nullptr) {
      return short_of(
          "ReservationCapacityExceeded",
          "The requested reservation does not have sufficient compatible and available capacity for "
          "this request.");
    }
    return out;
  }
  const ScriptedCapacityReservation* c = FindReservation(r.target);
  if (c == nullptr) {
    return refuse(400, "InvalidCapacityReservationId.NotFound",
                  "The capacity reservation ID '" + r.target + "' does not exist");
  }
  out.reservation = c;
  if (IsBlock(*c) && !r.capacity_block) {
    return refuse(
        400, "InvalidParameterCombination",
        "Launching into Capacity Block " + c->id + " needs InstanceMarketOptions.MarketType=capacity-block.");
  }
  if (!IsBlock(*c) && r.capacity_block) {
    return refuse(400, "InvalidParameterCombination", c->id + " is not a Capacity Block.");
  }
  if (c->instance_type != r.type || c->zone != r.zone) {
    return short_of(
        "ReservationCapacityExceeded",
        "The requested reservation does not have sufficient compatible and available capacity for this "
        "request (it holds " +
            c->instance_type + " in " + c->zone + ").");
  }
  const std::string state = ReservationState(*c, now);
  // A block in its last half hour takes no launch: EC2 is taking its
  // instances back.
  const bool ending = IsBlock(*c) && c->end && now >= *c->end - kBlockEndNotice;
  if (state != "active" || ending) {
    return short_of("InsufficientInstanceCapacity", "Capacity Reservation " + c->id + " is " +
                                                        (ending && state == "active" ? "ending" : state) +
                                                        ": it takes no launch now.");
  }
  out.room = std::max(0, c->count - ReservationInUse(c->id));
  if (out.room == 0) {
    // EC2 Fleet answers a full block with an insufficient capacity error;
    // a full targeted ODCR is ReservationCapacityExceeded.
    return short_of(
        IsBlock(*c) ? "InsufficientInstanceCapacity" : "ReservationCapacityExceeded",
        "The requested reservation does not have sufficient compatible and available capacity for this "
        "request.");
  }
  return out;
}

void CloudEmulator::TakeSlot(Instance& i, const SlotRequest& r, WallTime now) {
  i.info.capacity_reservation_preference = r.preference.empty() ? "open" : r.preference;
  i.info.capacity_block = r.capacity_block;
  if (r.preference == "none") return;
  if (const SlotRoom room = ReservationRoom(r, now); room.reservation != nullptr && room.room > 0) {
    i.info.capacity_reservation_id = room.reservation->id;
    return;
  }
  if (!r.target.empty() || i.info.lifecycle != CapacityType::kOnDemand) return;
  // An on-demand launch open to reservations lands in an open one that has
  // a free slot, as EC2 does.
  for (const ScriptedCapacityReservation& c : scenario_.capacity_reservations) {
    if (c.match != "open" || IsBlock(c) || c.instance_type != r.type || c.zone != r.zone) continue;
    if (ReservationState(c, now) != "active" || ReservationInUse(c.id) >= c.count) continue;
    i.info.capacity_reservation_id = c.id;
    return;
  }
}

void CloudEmulator::ReclaimCapacityBlocks(WallTime now) {
  for (const ScriptedCapacityReservation& c : scenario_.capacity_reservations) {
    if (!IsBlock(c) || !c.end || now < *c.end - kBlockEndNotice) continue;
    for (Instance& i : instances_) {
      if (i.info.capacity_reservation_id == c.id && IsLive(i.info))
        Terminate(i, std::max(i.info.launch_time, *c.end - kBlockEndNotice));
    }
  }
}

EmulatorResponse CloudEmulator::DescribeCapacityReservations(const Params& p) {
  const WallTime now = clock_.WallNow();
  const std::vector<std::string> ids = p.List("CapacityReservationId");
  for (const std::string& id : ids) {
    if (FindReservation(id) == nullptr) {
      return Ec2Error(400, "InvalidCapacityReservationId.NotFound",
                      "The capacity reservation ID '" + id + "' does not exist");
    }
  }
  const std::vector<cloud::Filter> filters = p.Filters("Filter", "Value");
  for (const cloud::Filter& f : filters) {
    if (!IsReservationFilter(f.name))
      return Ec2Error(400, "InvalidParameterValue", "The filter '" + f.name + "' is invalid");
  }
  int max_results = 1000;
  if (p.Has("MaxResults") &&
      (!ParseInt(p.Get("MaxResults"), &max_results) || max_results < 1 || max_results > 1000)) {
    return Ec2Error(400, "InvalidParameterValue",
                    "Value for parameter maxResults is invalid. Expecting a value between 1 and 1000.");
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return Ec2Error(400, "InvalidParameterValue", "The token is invalid.");
  }
  std::vector<const ScriptedCapacityReservation*> match;
  for (const ScriptedCapacityReservation& c : scenario_.capacity_reservations) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), c.id) == ids.end()) continue;
    const std::string state = ReservationState(c, now);
    if (MatchesFilters(filters, c.tags,
                       {{"instance-type", c.instance_type},
                        {"availability-zone", c.zone},
                        {"state", state},
                        {"instance-match-criteria", c.match},
                        {"reservation-type", c.type},
                        {"end-date-type", c.end ? "limited" : "unlimited"},
                        {"owner-id", scenario_.account_id},
                        {"tenancy", "default"},
                        {"instance-platform", "Linux/UNIX"}})) {
      match.push_back(&c);
    }
  }
  const size_t last = std::min(match.size(), offset + static_cast<size_t>(max_results));
  std::string body = Ec2Open("DescribeCapacityReservations", Uuid());
  body += "<capacityReservationSet>";
  for (size_t k = offset; k < last; ++k) {
    const ScriptedCapacityReservation& c = *match[k];
    const std::string state = ReservationState(c, now);
    const int in_use = ReservationInUse(c.id);
    body += "<item>";
    Leaf(body, "capacityReservationId", c.id);
    Leaf(body, "ownerId", scenario_.account_id);
    Leaf(body, "capacityReservationArn",
         "arn:aws:ec2:" + scenario_.region + ":" + scenario_.account_id + ":capacity-reservation/" + c.id);
    Leaf(body, "instanceType", c.instance_type);
    Leaf(body, "instancePlatform", "Linux/UNIX");
    Leaf(body, "availabilityZone", c.zone);
    Leaf(body, "tenancy", "default");
    Leaf(body, "totalInstanceCount", std::to_string(c.count));
    Leaf(body, "availableInstanceCount",
         std::to_string(state == "expired" ? 0 : std::max(0, c.count - in_use)));
    Leaf(body, "ebsOptimized", "true");
    Leaf(body, "ephemeralStorage", "false");
    Leaf(body, "state", state);
    Leaf(body, "startDate", Ec2Time(c.start));
    if (c.end) Leaf(body, "endDate", Ec2Time(*c.end));
    Leaf(body, "endDateType", c.end ? "limited" : "unlimited");
    Leaf(body, "instanceMatchCriteria", c.match);
    Leaf(body, "createDate", Ec2Time(std::min(start_, c.start)));
    TagSet(body, c.tags);
    Leaf(body, "reservationType", c.type);
    body += "</item>";
  }
  body += "</capacityReservationSet>\n";
  if (last < match.size()) {
    Leaf(body, "nextToken", PageToken(last));
    body += '\n';
  }
  body += "</DescribeCapacityReservationsResponse>\n";
  return {200, kXmlContentType, {}, body};
}

}  // namespace gpuscaler::sim
