#include <algorithm>
#include <map>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

// A fleet's MinTargetCapacity and SingleAvailabilityZone for one lifecycle
// (SpotOptions or OnDemandOptions): with a single zone, keeps in `order` the
// overrides of the first zone (in `order`) whose room reaches the minimum (1
// without one); without, checks the minimum against all the room. False: the
// minimum cannot be met, and the fleet launches nothing of this lifecycle.
// `room(o)`: what an override can take now.
template <class Override, class RoomFn>
bool FitMinTarget(int min_target, bool single_zone, std::vector<const Override*>* order, RoomFn room) {
  if (!single_zone && min_target <= 0) return true;
  const int enough = std::max(1, min_target);
  if (!single_zone) {
    int total = 0;
    for (const Override* o : *order) total += room(*o);
    return total >= enough;
  }
  std::vector<std::string> zones;
  for (const Override* o : *order) {
    if (std::find(zones.begin(), zones.end(), o->zone) == zones.end()) zones.push_back(o->zone);
  }
  for (const std::string& zone : zones) {
    int in_zone = 0;
    for (const Override* o : *order) in_zone += o->zone == zone ? room(*o) : 0;
    if (in_zone < enough) continue;
    std::erase_if(*order, [&](const Override* o) { return o->zone != zone; });
    return true;
  }
  return false;
}

// The on-demand and spot parts of a fleet's TargetCapacitySpecification:
// `total` split by the capacities it names, the part it does not name going
// to `default_type` (capacity-block counts as on-demand). False when they do
// not add up.
template <class Params>
bool SplitTargetCapacity(const Params& p, const std::string& default_type, int total, int* on_demand,
                         int* spot) {
  const std::string tc = "TargetCapacitySpecification.";
  if (p.Has(tc + "OnDemandTargetCapacity")) ParseInt(p.Get(tc + "OnDemandTargetCapacity"), on_demand);
  if (p.Has(tc + "SpotTargetCapacity")) ParseInt(p.Get(tc + "SpotTargetCapacity"), spot);
  if (default_type == "spot") {
    if (*on_demand < 0) *on_demand = *spot >= 0 ? total - *spot : 0;
    *spot = total - *on_demand;
  } else {
    if (*spot < 0) *spot = *on_demand >= 0 ? total - *on_demand : 0;
    *on_demand = total - *spot;
  }
  return *spot >= 0 && *on_demand >= 0;
}

// The errorMessage of an override that fell short with `code`.
std::string ShortfallMessage(const std::string& code, const std::string& type, const std::string& zone,
                             CapacityType lifecycle) {
  if (code == "ReservationCapacityExceeded") {
    return "The requested reservation does not have sufficient compatible and available capacity for this "
           "request.";
  }
  if (code == "InsufficientInstanceCapacity") {
    return "We currently do not have sufficient " + type +
           " capacity in the Availability Zone you requested (" + zone + ").";
  }
  return "There is no " + std::string(ToString(lifecycle)) + " capacity available that matches your request.";
}

// The tags of TagSpecification items with ResourceType=instance.
template <class Params>
std::map<std::string, std::string> InstanceTags(const Params& p) {
  std::map<std::string, std::string> tags;
  for (int n = 1; p.Has("TagSpecification." + std::to_string(n) + ".ResourceType"); ++n) {
    const std::string ts = "TagSpecification." + std::to_string(n) + ".";
    if (p.Get(ts + "ResourceType") != "instance") continue;
    for (int m = 1; p.Has(ts + "Tag." + std::to_string(m) + ".Key"); ++m) {
      tags[p.Get(ts + "Tag." + std::to_string(m) + ".Key")] = p.Get(ts + "Tag." + std::to_string(m) + ".Value");
    }
  }
  return tags;
}

// <launchTemplateAndOverrides> of one override, as a fleet's answer names it.
template <class Override>
void OverrideXml(std::string& out, const Override& o) {
  out += "<launchTemplateAndOverrides><launchTemplateSpecification>";
  if (!o.lt_id.empty()) Leaf(out, "launchTemplateId", o.lt_id);
  else Leaf(out, "launchTemplateName", o.lt_name);
  if (!o.lt_version.empty()) Leaf(out, "version", o.lt_version);
  out += "</launchTemplateSpecification><overrides>";
  Leaf(out, "instanceType", o.type);
  if (o.by_subnet) Leaf(out, "subnetId", o.subnet);
  else Leaf(out, "availabilityZone", o.zone);
  if (o.priority < 1e300) Leaf(out, "priority", std::to_string(o.priority));
  if (!o.placement_group.empty()) {
    out += "<placement>";
    Leaf(out, "groupName", o.placement_group);
    out += "</placement>";
  }
  out += "</overrides></launchTemplateAndOverrides>";
}

// An instant fleet's answer: its errorSet (what each override fell short
// by) and fleetInstanceSet (what each launched).
template <class Launched, class Shortfall>
std::string FleetAnswer(const std::string& request_id, const std::string& fleet_id,
                        const std::vector<Shortfall>& errors, const std::vector<Launched>& got) {
  std::string body = Ec2Open("CreateFleet", request_id);
  Leaf(body, "fleetId", fleet_id);
  body += "\n<errorSet>";
  for (const Shortfall& e : errors) {
    body += "<item>";
    OverrideXml(body, *e.o);
    Leaf(body, "lifecycle", ToString(e.lifecycle));
    Leaf(body, "errorCode", e.code);
    Leaf(body, "errorMessage", e.message);
    body += "</item>";
  }
  body += "</errorSet>\n<fleetInstanceSet>";
  for (const Launched& g : got) {
    body += "<item>";
    OverrideXml(body, *g.o);
    Leaf(body, "lifecycle", ToString(g.lifecycle));
    body += "<instanceIds>";
    for (const std::string& id : g.ids) Leaf(body, "item", id);
    body += "</instanceIds>";
    Leaf(body, "instanceType", g.o->type);
    body += "</item>";
  }
  body += "</fleetInstanceSet>\n</CreateFleetResponse>\n";
  return body;
}

}  // namespace

struct CloudEmulator::FleetOverride {
  std::string lt_id, lt_name, lt_version;
  std::string known_template, known_version;  // a template the emulator holds, and the version used
  std::string type, zone, subnet;
  std::string placement_group;  // Placement.GroupName, or ""
  // From the launch template's data: the capacity reservation it targets,
  // its preference and market type ("" when not set). A fleet override
  // cannot set these itself.
  std::string reservation_target, reservation_preference, market_type;
  double priority = 1e300;
  bool by_subnet = false;
  size_t order = 0;
};

std::optional<std::pair<int, std::string>> CloudEmulator::FleetRoom(const FleetOverride& o,
                                                                    CapacityType lifecycle, bool block_fleet,
                                                                    WallTime now) const {
  if (o.reservation_target.empty() && !block_fleet &&
      o.reservation_preference != "capacity-reservations-only") {
    return Room(o.type, o.zone, lifecycle, now);
  }
  SlotRequest r{o.type, o.zone, o.reservation_preference, o.reservation_target, block_fleet};
  const SlotRoom room = ReservationRoom(r, now);
  // The code names why a launch falls short of `room`, or gets none.
  std::string code = room.code;
  if (code.empty()) {
    code = room.reservation != nullptr && room.reservation->type == "capacity-block"
               ? "InsufficientInstanceCapacity"
               : "ReservationCapacityExceeded";
  }
  return std::make_pair(room.room, code);
}

std::optional<EmulatorResponse> CloudEmulator::ReadFleetOverrides(const Params& p, std::vector<FleetOverride>* out) {
  for (int k = 1; p.HasPrefix("LaunchTemplateConfigs." + std::to_string(k) + "."); ++k) {
    const std::string lt = "LaunchTemplateConfigs." + std::to_string(k) + ".";
    FleetOverride base;
    base.lt_id = p.Get(lt + "LaunchTemplateSpecification.LaunchTemplateId");
    base.lt_name = p.Get(lt + "LaunchTemplateSpecification.LaunchTemplateName");
    base.lt_version = p.Get(lt + "LaunchTemplateSpecification.Version");
    if (base.lt_id.empty() && base.lt_name.empty()) {
      return Ec2Error(400, "MissingParameter", "A launch template ID or name is required.");
    }
    if (const LaunchTemplate* known = FindTemplate(p, lt + "LaunchTemplateSpecification.")) {
      const TemplateVersion* v = FindVersion(*known, base.lt_version);
      if (v == nullptr) {
        return Ec2Error(400, "InvalidLaunchTemplateId.VersionNotFound",
                        "Could not find launch template version " + base.lt_version + " of " + known->name + ".");
      }
      base.known_template = known->name;
      base.known_version = std::to_string(v->number);
      base.reservation_target =
          cloud::FormValue(v->data, "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId")
              .value_or("");
      base.reservation_preference =
          cloud::FormValue(v->data, "CapacityReservationSpecification.CapacityReservationPreference").value_or("");
      base.market_type = cloud::FormValue(v->data, "InstanceMarketOptions.MarketType").value_or("");
    }
    for (int n = 1; p.HasPrefix(lt + "Overrides." + std::to_string(n) + "."); ++n) {
      const std::string o = lt + "Overrides." + std::to_string(n) + ".";
      FleetOverride ov = base;
      ov.type = p.Get(o + "InstanceType");
      ov.zone = p.Get(o + "AvailabilityZone");
      ov.subnet = p.Get(o + "SubnetId");
      if (ov.type.empty()) return Ec2Error(400, "MissingParameter", "Each override needs an InstanceType in this emulator.");
      if (!ov.subnet.empty()) {
        auto s = scenario_.subnets.find(ov.subnet);
        if (s == scenario_.subnets.end()) {
          return Ec2Error(400, "InvalidSubnetID.NotFound", "The subnet ID '" + ov.subnet + "' does not exist");
        }
        if (ov.zone.empty()) ov.zone = s->second;
        ov.by_subnet = true;
      }
      if (ov.zone.empty()) ov.zone = scenario_.zones.empty() ? scenario_.region + "a" : scenario_.zones[0];
      else if (std::find(scenario_.zones.begin(), scenario_.zones.end(), ov.zone) == scenario_.zones.end()) {
        return Ec2Error(400, "InvalidParameterValue", "Invalid availability zone: [" + ov.zone + "]");
      }
      ov.placement_group = p.Get(o + "Placement.GroupName");
      if (!ov.placement_group.empty() && placement_groups_.count(ov.placement_group) == 0) {
        return Ec2Error(400, "InvalidPlacementGroup.Unknown",
                        "The Placement Group '" + ov.placement_group + "' is unknown.");
      }
      if (p.Has(o + "Priority")) ov.priority = std::strtod(p.Get(o + "Priority").c_str(), nullptr);
      ov.order = out->size();
      out->push_back(ov);
    }
  }
  return std::nullopt;
}

EmulatorResponse CloudEmulator::CreateFleet(const Params& p, WallTime now) {
  ++stats_.create_fleet_calls;
  const std::string token = p.Get("ClientToken");
  if (token.size() > 64) {
    return Ec2Error(400, "InvalidParameterValue",
                    "Value for parameter ClientToken is invalid. Length exceeds maximum of 64 characters.");
  }
  if (auto it = fleet_answers_.find(token); !token.empty() && it != fleet_answers_.end()) {
    return {200, kXmlContentType, {}, it->second};
  }
  const std::string type = p.Has("Type") ? p.Get("Type") : "maintain";
  if (type != "instant") {
    return Ec2Error(400, "InvalidParameterValue", "This emulator supports only Type=instant fleets, not '" + type + "'.");
  }
  int total = 0;
  if (!ParseInt(p.Get("TargetCapacitySpecification.TotalTargetCapacity"), &total) || total < 0) {
    return Ec2Error(400, "MissingParameter", "The request must contain the parameter TargetCapacitySpecification.TotalTargetCapacity");
  }
  const std::string default_type = p.Get("TargetCapacitySpecification.DefaultTargetCapacityType");
  // capacity-block: on-demand capacity from the block each template targets.
  const bool block_fleet = default_type == "capacity-block";
  if (default_type != "spot" && default_type != "on-demand" && !block_fleet) {
    return Ec2Error(400, "InvalidParameterValue",
                    "DefaultTargetCapacityType must be spot, on-demand or capacity-block.");
  }
  int on_demand = -1, spot = -1;
  if (!SplitTargetCapacity(p, default_type, total, &on_demand, &spot)) {
    return Ec2Error(400, "InvalidParameterValue", "Target capacities do not add up to TotalTargetCapacity.");
  }

  std::vector<FleetOverride> overrides;
  if (std::optional<EmulatorResponse> bad = ReadFleetOverrides(p, &overrides)) return *bad;
  if (overrides.empty()) return Ec2Error(400, "MissingParameter", "At least one launch template override is required.");
  if (block_fleet && std::any_of(overrides.begin(), overrides.end(),
                                 [](const FleetOverride& o) { return o.reservation_target.empty(); })) {
    return Ec2Error(400, "InvalidParameterCombination",
                    "A capacity-block fleet needs a launch template that targets a Capacity Block.");
  }

  const std::map<std::string, std::string> tags = InstanceTags(p);

  // The spot price in force now, for lowest-price / price-capacity-optimized.
  auto spot_price = [&](const FleetOverride& o) {
    double price = 1e300;
    WallTime best{};
    for (const ScriptedPrice& sp : scenario_.spot_prices) {
      if (sp.instance_type == o.type && sp.zone == o.zone && sp.time <= now && sp.time >= best) {
        best = sp.time;
        price = sp.usd_per_hour;
      }
    }
    return price;
  };
  auto od_price = [&](const FleetOverride& o) {
    auto it = scenario_.on_demand_prices.find(o.type);
    return it == scenario_.on_demand_prices.end() ? 1e300 : it->second;
  };

  const std::string fleet_id = "fleet-" + Uuid();
  const std::string reservation = NewId("r-", 17);
  struct Got {
    const FleetOverride* o;
    CapacityType lifecycle;
    std::vector<std::string> ids;
  };
  struct Err {
    const FleetOverride* o;
    CapacityType lifecycle;
    std::string code, message;
  };
  std::vector<Got> got;
  std::vector<Err> errors;
  for (CapacityType lifecycle : {CapacityType::kOnDemand, CapacityType::kSpot}) {
    int need = lifecycle == CapacityType::kSpot ? spot : on_demand;
    if (need == 0) continue;
    std::vector<const FleetOverride*> order;
    for (const FleetOverride& o : overrides) order.push_back(&o);
    const std::string strategy = lifecycle == CapacityType::kSpot ? p.Get("SpotOptions.AllocationStrategy")
                                                                  : p.Get("OnDemandOptions.AllocationStrategy");
    std::stable_sort(order.begin(), order.end(), [&](const FleetOverride* a, const FleetOverride* b) {
      if (strategy == "prioritized" || strategy == "capacity-optimized-prioritized") return a->priority < b->priority;
      if (lifecycle == CapacityType::kSpot) {
        if (strategy == "capacity-optimized") return false;
        return spot_price(*a) < spot_price(*b);
      }
      return od_price(*a) < od_price(*b);  // on-demand default: lowest-price
    });
    // A cluster placement group in use in another zone takes no instance
    // there, whatever the capacity.
    std::erase_if(order, [&](const FleetOverride* o) {
      if (o->placement_group.empty()) return false;
      const std::string in_use = PlacementGroupZone(o->placement_group);
      if (in_use.empty() || in_use == o->zone) return false;
      errors.push_back({o, lifecycle, "InvalidPlacementGroup.InUse",
                        "The placement group '" + o->placement_group + "' is in use in another availability zone: " +
                            in_use});
      return true;
    });
    const auto room_of = [&](const auto& o) {
      const auto room = FleetRoom(o, lifecycle, block_fleet, now);
      return room ? room->first : need;
    };
    const std::string options = lifecycle == CapacityType::kSpot ? "SpotOptions." : "OnDemandOptions.";
    int min_target = 0;
    if (p.Has(options + "MinTargetCapacity") && !ParseInt(p.Get(options + "MinTargetCapacity"), &min_target)) {
      return Ec2Error(400, "InvalidParameterValue", options + "MinTargetCapacity must be a whole number.");
    }
    if (!FitMinTarget(min_target, p.Get(options + "SingleAvailabilityZone") == "true", &order, room_of)) {
      for (const FleetOverride* o : order) {
        errors.push_back({o, lifecycle, "InsufficientInstanceCapacity",
                          "There is not enough capacity to fulfill your minimum target capacity in a single "
                          "Availability Zone (" + o->zone + ")."});
      }
      continue;
    }
    for (const FleetOverride* o : order) {
      if (need == 0) break;
      auto room = FleetRoom(*o, lifecycle, block_fleet, now);
      const int want = need;
      const int take = room ? std::min(want, room->first) : want;
      if (take > 0) {
        Got g{o, lifecycle, {}};
        for (int n = 0; n < take; ++n) {
          Instance& launched = Launch(o->type, o->zone, o->subnet, lifecycle, tags, token, reservation, now);
          if (!o->known_template.empty()) {
            // EC2 tags what it launches from a launch template with it.
            launched.info.launch_template = o->known_template;
            launched.info.launch_template_version = o->known_version;
            launched.info.tags["aws:ec2launchtemplate:id"] = templates_[o->known_template].id;
            launched.info.tags["aws:ec2launchtemplate:version"] = o->known_version;
          }
          launched.info.placement_group = o->placement_group;
          TakeSlot(launched,
                   {o->type, o->zone, o->reservation_preference, o->reservation_target, block_fleet}, now);
          g.ids.push_back(launched.info.instance_id);
        }
        got.push_back(std::move(g));
        need -= take;
      }
      if (take < want) {
        const std::string code = room->second;
        errors.push_back({o, lifecycle, code, ShortfallMessage(code, o->type, o->zone, lifecycle)});
      }
    }
  }

  const std::string body = FleetAnswer(Uuid(), fleet_id, errors, got);
  if (!token.empty()) fleet_answers_[token] = body;
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::TerminateInstances(const Params& p, WallTime now) {
  const std::vector<std::string> ids = p.List("InstanceId");
  if (ids.empty()) return Ec2Error(400, "MissingParameter", "The request must contain the parameter InstanceId");
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (id.rfind("i-", 0) != 0) return Ec2Error(400, "InvalidInstanceID.Malformed", "Invalid id: \"" + id + "\"");
    if (by_id_.count(id) == 0) missing.push_back(id);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& id : missing) list += (list.empty() ? "" : ", ") + id;
    return Ec2Error(400, "InvalidInstanceID.NotFound",
                    missing.size() == 1 ? "The instance ID '" + list + "' does not exist"
                                        : "The instance IDs '" + list + "' do not exist");
  }
  std::string body = Ec2Open("TerminateInstances", Uuid());
  body += "<instancesSet>";
  std::vector<size_t> replaced;  // instances of persistent Spot requests
  for (const std::string& id : ids) {
    Instance& i = instances_[by_id_[id]];
    const std::string before = i.info.state;
    Terminate(i, now);
    if (before != "shutting-down" && before != "terminated") replaced.push_back(by_id_[id]);
    body += "<item>";
    Leaf(body, "instanceId", id);
    body += "<currentState>";
    Leaf(body, "code", std::to_string(StateCode(i.info.state)));
    Leaf(body, "name", i.info.state);
    body += "</currentState><previousState>";
    Leaf(body, "code", std::to_string(StateCode(before)));
    Leaf(body, "name", before);
    body += "</previousState></item>";
  }
  body += "</instancesSet>\n</TerminateInstancesResponse>\n";
  for (size_t index : replaced) ReplacePersistentSpot(instances_[index], now);
  return {200, kXmlContentType, {}, body};
}

}  // namespace gpuscaler::sim
