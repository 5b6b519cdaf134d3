// GcpProvider: names, launches and quota blocks (listing, termination and
// preemptions are in gcp_provider_list.cc).
#include <algorithm>

#include "gcp_provider_impl.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::cloud {

using nlohmann::json;

std::string RegionOfZone(std::string_view zone) {
  const size_t dash = zone.rfind('-');
  return std::string(dash == std::string_view::npos ? zone : zone.substr(0, dash));
}

std::string MetadataItem(const json& resource, const char* key) {
  for (const json& item : ArrayAt(ObjectAt(resource, "metadata"), "items")) {
    if (StringAt(item, "key") == key) return StringAt(item, "value");
  }
  return "";
}

GcpProvider::GcpProvider(GcpProviderOptions options, GcpClient& client, GcpClient* billing)
    : options_(std::move(options)),
      client_(client),
      cluster_label_(LabelValue(options_.cluster_name)),
      billing_(options_.billing_catalog.enabled ? billing : nullptr) {}

std::string GcpProvider::LabelValue(std::string_view name) {
  constexpr size_t kMax = 63;
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    const char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '_' || l == '-';
    out += ok ? l : '-';
  }
  if (out == name && out.size() <= kMax) return out;
  // The hash covers the original, so names that differ only where the
  // mapping is lossy (case, other characters, the cut) still differ.
  return out.substr(0, kMax - 9) + "-" + Sha256Hex(name).substr(0, 8);
}

std::string GcpProvider::IntentHash(std::string_view token) { return Sha256Hex(token).substr(0, 12); }

std::string GcpProvider::InstanceName(std::string_view cluster_name, std::string_view token, int slot) {
  constexpr size_t kClusterChars = 20;
  std::string cluster = LabelValue(cluster_name).substr(0, kClusterChars);
  std::replace(cluster.begin(), cluster.end(), '_', '-');
  while (!cluster.empty() && cluster.back() == '-') cluster.pop_back();
  std::string name = "gs-";
  if (!cluster.empty()) name += cluster + "-";
  return name + IntentHash(token) + "-" + std::to_string(slot);
}

std::string GcpProvider::RequestId(std::string_view seed) {
  std::string hex = Sha256Hex(seed).substr(0, 32);
  hex[12] = '5';  // version
  static constexpr char kVariant[] = "89ab";
  hex[16] = kVariant[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
         hex.substr(20, 12);
}

std::string GcpProvider::MachineFamily(std::string_view machine_type) {
  const size_t first = machine_type.find('-');
  if (first == std::string_view::npos) return std::string(machine_type);
  const size_t second = machine_type.find('-', first + 1);
  return std::string(machine_type.substr(0, second));
}

GcpPoolTarget GcpProvider::TargetFor(const std::string& pool) const {
  auto it = options_.pools.find(pool);
  GcpPoolTarget t = it == options_.pools.end() ? GcpPoolTarget{} : it->second;
  if (!t.uses_migs() && t.instance_template.empty()) t.instance_template = options_.instance_template;
  return t;
}

std::string GcpProvider::MigFor(const GcpPoolTarget& target, const std::string& pool,
                                const std::string& zone) const {
  if (auto it = target.migs.find(zone); it != target.migs.end()) return it->second;
  if (target.mig_pattern.empty()) return "";
  std::string name = target.mig_pattern;
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = name.find(from); at != std::string::npos; at = name.find(from, at + to.size())) {
      name.replace(at, from.size(), to);
    }
  };
  replace("{pool}", LabelValue(pool));
  replace("{zone}", zone);
  return name;
}

std::vector<std::string> GcpProvider::MigZones(const GcpPoolTarget& target) const {
  std::set<std::string> zones;
  for (const auto& [zone, mig] : target.migs) zones.insert(zone);
  if (!target.mig_pattern.empty()) zones.insert(options_.zones.begin(), options_.zones.end());
  return {zones.begin(), zones.end()};
}

std::string GcpProvider::ZonePath(const std::string& zone) const {
  return "projects/" + options_.project + "/zones/" + zone;
}

Result<GcpOperation> GcpProvider::Wait(const json& operation) {
  Result<GcpOperation> op = ParseGcpOperation(operation);
  if (!op) return op.error().WithContext("waiting for an operation");
  const SteadyTime deadline = client_.clock().Now() + options_.operation_timeout;
  while (!op->done()) {
    const std::string path =
        (op->zone.empty() && !op->region.empty() ? "projects/" + options_.project + "/regions/" + op->region
                                                 : ZonePath(op->zone)) +
        "/operations/" + op->name;
    if (client_.clock().Now() >= deadline) {
      Result<json> got = client_.Call("GET", path);
      if (!got) return got.error();
      return ParseGcpOperation(*got);
    }
    Result<json> waited = client_.Call("POST", path + "/wait");
    if (!waited) {
      // The wait endpoint may drop a long call: read the operation instead.
      waited = client_.Call("GET", path);
      if (!waited) return waited.error();
    }
    Result<GcpOperation> next = ParseGcpOperation(*waited);
    if (!next) return next.error();
    op = std::move(next);
    if (!op->done()) client_.Sleep(options_.poll_interval);
  }
  return op;
}

Result<json> GcpProvider::ListManaged(const std::string& zone, const std::string& mig) {
  json all = json::array();
  std::string page;
  do {
    std::string path = ZonePath(zone) + "/instanceGroupManagers/" + mig + "/listManagedInstances";
    if (!page.empty()) path += "?pageToken=" + net::PercentEncode(page);
    Result<json> got = client_.Call("POST", path);
    if (!got) return got.error();
    for (const json& m : ArrayAt(*got, "managedInstances")) all.push_back(m);
    page = StringAt(*got, "nextPageToken");
  } while (!page.empty());
  return all;
}

Status GcpProvider::DeleteFromMig(const std::string& zone, const std::string& mig,
                                  const std::vector<std::string>& names) {
  json body = {{"instances", json::array()}, {"skipInstancesOnValidationError", true}};
  std::string seed = "delete/" + zone + "/" + mig;
  for (const std::string& n : names) {
    body["instances"].push_back("zones/" + zone + "/instances/" + n);
    seed += "/" + n;
  }
  Result<json> op = client_.Call(
      "POST",
      ZonePath(zone) + "/instanceGroupManagers/" + mig + "/deleteInstances?requestId=" + RequestId(seed),
      body);
  if (!op) return op.error();
  Result<GcpOperation> done = Wait(*op);
  if (!done) return done.error();
  if (!done->errors.empty()) {
    return GcpErrorFrom("deleteInstances on group " + mig, done->errors, done->http_error_status);
  }
  return Status::Ok();
}

Result<std::vector<Instance>> GcpProvider::ExistingInMigs(const LaunchRequest& request,
                                                          const GcpPoolTarget& target) {
  std::vector<Instance> out;
  const std::string prefix = InstanceName(options_.cluster_name, request.idempotency_token, 0);
  const std::string base = prefix.substr(0, prefix.size() - 1);  // up to the slot number
  // (zone, group) -> the reserved offering whose group it is (null: a plain group).
  std::map<std::pair<std::string, std::string>, const Offering*> groups;
  for (const std::string& zone : MigZones(target))
    groups[{zone, MigFor(target, request.pool, zone)}] = nullptr;
  for (const Offering& o : request.offerings) {
    if (o.capacity_type != CapacityType::kReserved) continue;
    if (const std::string mig = GroupFor(target, request.pool, o); !mig.empty()) groups[{o.zone, mig}] = &o;
  }
  for (const auto& [where, reserved] : groups) {
    const auto& [zone, mig] = where;
    Result<json> managed = ListManaged(zone, mig);
    if (!managed) {
      if (managed.error().category() == ErrorCategory::kNotFound) continue;  // no group in this zone
      return managed.error().WithContext("group " + mig);
    }
    std::vector<std::string> failed;
    for (const json& m : *managed) {
      std::string name = StringAt(m, "name");
      if (name.empty()) name = LastSegment(StringAt(m, "instance"));
      if (name.rfind(base, 0) != 0) continue;
      const std::string status = StringAt(m, "instanceStatus");
      if (status.empty() && !ParseGcpErrorItems(ObjectAt(ObjectAt(m, "lastAttempt"), "errors")).empty()) {
        failed.push_back(name);  // the group keeps failing to create it
        continue;
      }
      Instance inst;
      inst.instance_id = name;
      inst.pool = request.pool;
      inst.offering.zone = zone;
      inst.offering.region = RegionOfZone(zone);
      if (reserved != nullptr) inst.offering = *reserved;
      if (auto known = launched_.find(name); known != launched_.end()) inst.offering = known->second.offering;
      inst.launch_time = client_.clock().WallNow();
      inst.state = status == "RUNNING" ? InstanceState::kRunning : InstanceState::kPending;
      inst.tags = request.tags;
      inst.tags[kOwnerTag] = request.pool;
      inst.tags[kClusterTag] = options_.cluster_name;
      launched_[name] = {zone, mig, inst.offering, request.pool, request.idempotency_token};
      out.push_back(std::move(inst));
    }
    if (!failed.empty()) {
      if (Status s = DeleteFromMig(zone, mig, failed); !s.ok()) return s.error().WithContext("group " + mig);
    }
  }
  return out;
}

Result<std::vector<Instance>> GcpProvider::ExistingBare(const LaunchRequest& request) {
  Result<std::vector<json>> found = AggregatedInstances(std::string("labels.") + kGcpIntentLabel + " = \"" +
                                                        IntentHash(request.idempotency_token) + "\"");
  if (!found) return found.error();
  const std::string first = InstanceName(options_.cluster_name, request.idempotency_token, 0);
  const std::string base = first.substr(0, first.size() - 1);  // up to the slot number
  std::vector<Instance> out;
  for (const json& r : *found) {
    if (StringAt(ObjectAt(r, "labels"), kGcpClusterLabel) != cluster_label_) continue;
    // The name embeds the token's hash; the metadata (where kept) the token.
    if (StringAt(r, "name").rfind(base, 0) != 0) continue;
    if (const std::string token = MetadataItem(r, kGcpIntentLabel);
        !token.empty() && token != request.idempotency_token)
      continue;
    Instance inst = ToInstance(r);
    inst.pool = request.pool;
    inst.tags[kOwnerTag] = request.pool;
    inst.tags[kIntentTag] = request.idempotency_token;
    out.push_back(std::move(inst));
  }
  return out;
}

Result<GcpProvider::Created> GcpProvider::CreateInMig(const LaunchRequest& request,
                                                      const GcpPoolTarget& target, const Offering& offering,
                                                      const std::vector<int>& slots) {
  const bool reserved = offering.capacity_type == CapacityType::kReserved;
  const std::string mig = GroupFor(target, request.pool, offering);
  if (mig.empty()) {
    return Error::Config(
        "pool '" + request.pool + "': no managed instance group " +
        (reserved ? "for reservation " + offering.reservation_id : "in zone " + offering.zone) +
        " (cloud.gcp.pools." + request.pool + (reserved ? ".reservation_migs)" : ")"));
  }
  if (reserved) {
    if (Status s = CheckReservationGroup(request.pool, offering.zone, mig, offering.reservation_id); !s.ok())
      return s.error();
  }
  json body = {{"instances", json::array()}};
  std::vector<std::string> names;
  std::string seed = request.idempotency_token + "/" + offering.Key();
  for (int slot : slots) {
    names.push_back(InstanceName(options_.cluster_name, request.idempotency_token, slot));
    seed += "/" + names.back();
    body["instances"].push_back({{"name", names.back()},
                                 {"preservedState",
                                  {{"metadata",
                                    {{kGcpIntentLabel, request.idempotency_token},
                                     {kGcpPoolLabel, request.pool},
                                     {kGcpClusterLabel, options_.cluster_name}}}}}});
  }
  const std::string what = "createInstances on group " + mig;
  Result<json> sent = client_.Call("POST",
                                   ZonePath(offering.zone) + "/instanceGroupManagers/" + mig +
                                       "/createInstances?requestId=" + RequestId(seed),
                                   body);
  if (!sent) return sent.error().WithContext(what);
  Result<GcpOperation> op = Wait(*sent);
  if (!op) return op.error().WithContext(what);
  Created out;
  if (op->done() && !op->errors.empty()) {
    out.errors.push_back(GcpErrorFrom(what, op->errors, op->http_error_status));
    for (const GcpErrorItem& e : op->errors) {
      if (IsQuotaError(e.code)) out.quota_errors.push_back(e);
    }
    return out;
  }
  // Follow the new instances until each is created or has failed.
  std::map<std::string, std::string> status;  // name -> instanceStatus
  std::map<std::string, std::vector<GcpErrorItem>> failed;
  const SteadyTime deadline = client_.clock().Now() + options_.operation_timeout;
  while (true) {
    Result<json> managed = ListManaged(offering.zone, mig);
    if (!managed) break;  // the creation was accepted; the instances show later
    for (const json& m : *managed) {
      std::string name = StringAt(m, "name");
      if (name.empty()) name = LastSegment(StringAt(m, "instance"));
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      if (const std::string s = StringAt(m, "instanceStatus"); !s.empty()) {
        status[name] = s;
        failed.erase(name);
      } else if (auto errors = ParseGcpErrorItems(ObjectAt(ObjectAt(m, "lastAttempt"), "errors"));
                 !errors.empty()) {
        failed[name] = std::move(errors);
      }
    }
    if (status.size() + failed.size() >= names.size() || client_.clock().Now() >= deadline) break;
    client_.Sleep(options_.poll_interval);
  }
  if (request.all_or_nothing && (!failed.empty() || status.size() < names.size())) {
    return GiveBackPartialGang(offering.zone, mig, names, status.size(), failed, what);
  }
  const WallTime now = client_.clock().WallNow();
  std::vector<std::string> cancel;
  std::vector<GcpErrorItem> errors;
  for (const std::string& name : names) {
    if (auto f = failed.find(name); f != failed.end()) {
      cancel.push_back(name);
      errors.insert(errors.end(), f->second.begin(), f->second.end());
      continue;
    }
    Instance inst;
    inst.instance_id = name;
    inst.pool = request.pool;
    inst.offering = offering;
    inst.launch_time = now;
    inst.state = status[name] == "RUNNING" ? InstanceState::kRunning : InstanceState::kPending;
    inst.tags = request.tags;
    inst.tags[kOwnerTag] = request.pool;
    inst.tags[kClusterTag] = options_.cluster_name;
    launched_[name] = {offering.zone, mig, offering, request.pool, request.idempotency_token};
    out.instances.push_back(std::move(inst));
  }
  if (!cancel.empty()) {
    // The group would retry these forever; the controller buys elsewhere.
    TakeBack(offering.zone, mig, cancel,
             GcpErrorFrom(what + ": " + std::to_string(cancel.size()) + " instance(s) failed", errors, 0),
             errors, "cancelling failed instances", &out);
  }
  return out;
}

void GcpProvider::TakeBack(const std::string& zone, const std::string& mig,
                           const std::vector<std::string>& names, Error error,
                           const std::vector<GcpErrorItem>& items, const std::string& doing, Created* out) {
  if (Status s = DeleteFromMig(zone, mig, names); !s.ok()) {
    error = error.WithContext(doing + " also failed (" + s.error().message() + ")");
  }
  out->errors.push_back(std::move(error));
  for (const GcpErrorItem& item : items) {
    if (IsQuotaError(item.code)) out->quota_errors.push_back(item);
  }
}

GcpProvider::Created GcpProvider::GiveBackPartialGang(
    const std::string& zone, const std::string& mig, const std::vector<std::string>& names, size_t came_up,
    const std::map<std::string, std::vector<GcpErrorItem>>& failed, const std::string& what) {
  std::vector<GcpErrorItem> errors;
  for (const auto& [name, items] : failed) errors.insert(errors.end(), items.begin(), items.end());
  const std::string why = what + ": a gang needs all " + std::to_string(names.size()) + " nodes; " +
                          std::to_string(came_up) + " came up within " +
                          std::to_string(options_.operation_timeout.count()) + " s (" +
                          std::to_string(failed.size()) + " failed), and every one of them is given back";
  Created out;
  TakeBack(zone, mig, names, errors.empty() ? Error::Capacity(why) : GcpErrorFrom(why, errors, 0), errors,
           "giving the gang back", &out);
  return out;
}

Result<GcpProvider::Created> GcpProvider::CreateBare(const LaunchRequest& request,
                                                     const GcpPoolTarget& target, const Offering& offering,
                                                     const std::vector<int>& slots) {
  const bool spot = offering.capacity_type == CapacityType::kSpot;
  json labels = {{kGcpClusterLabel, cluster_label_},
                 {kGcpPoolLabel, LabelValue(request.pool)},
                 {kGcpIntentLabel, IntentHash(request.idempotency_token)}};
  json scheduling = spot ? json{{"provisioningModel", "SPOT"},
                                {"instanceTerminationAction", "DELETE"},
                                {"automaticRestart", false},
                                {"onHostMaintenance", "TERMINATE"}}
                         : json{{"provisioningModel", "STANDARD"}, {"onHostMaintenance", "TERMINATE"}};
  json props = {{"machineType", offering.instance_type},
                {"labels", labels},
                {"scheduling", scheduling},
                {"metadata",
                 {{"items",
                   {{{"key", kGcpClusterLabel}, {"value", options_.cluster_name}},
                    {{"key", kGcpPoolLabel}, {"value", request.pool}},
                    {{"key", kGcpIntentLabel}, {"value", request.idempotency_token}}}}}}};
  json per_instance = json::object();
  std::vector<std::string> names;
  std::string seed = request.idempotency_token + "/" + offering.Key();
  for (int slot : slots) {
    names.push_back(InstanceName(options_.cluster_name, request.idempotency_token, slot));
    per_instance[names.back()] = json::object();
    seed += "/" + names.back();
  }
  // A slot of a specific reservation (provisioningModel STANDARD above).
  if (offering.capacity_type == CapacityType::kReserved)
    props["reservationAffinity"] = GcpReservationAffinity(offering.reservation_id);
  if (!request.placement_group.empty()) {
    // InstanceProperties takes resource policies by name, not URL.
    Status placed = EnsureResourcePolicy(request.pool, RegionOfZone(offering.zone), request.placement_group);
    if (!placed.ok()) return placed.error();
    props["resourcePolicies"] = json::array({request.placement_group});
  }
  // count and minCount are int64 fields: JSON strings in Google's encoding.
  // A gang's nodes: all of them or none (minCount = count).
  json body = {{"count", std::to_string(names.size())},
               {"minCount", request.all_or_nothing ? std::to_string(names.size()) : std::string("1")},
               {"perInstanceProperties", per_instance},
               {"instanceProperties", props}};
  if (!target.instance_template.empty()) body["sourceInstanceTemplate"] = target.instance_template;
  const std::string what = "bulkInsert in " + offering.zone;
  Result<json> sent = client_.Call(
      "POST", ZonePath(offering.zone) + "/instances/bulkInsert?requestId=" + RequestId(seed), body);
  if (!sent) return sent.error().WithContext(what);
  Result<GcpOperation> op = Wait(*sent);
  if (!op) return op.error().WithContext(what);
  Created out;
  for (const GcpErrorItem& e : op->errors) {
    if (IsQuotaError(e.code)) out.quota_errors.push_back(e);
  }
  if (!op->done()) {
    // Accepted and still running: the instances are on their way.
    for (const std::string& name : names) {
      Instance inst;
      inst.instance_id = name;
      inst.pool = request.pool;
      inst.offering = offering;
      inst.launch_time = client_.clock().WallNow();
      inst.tags = request.tags;
      inst.tags[kOwnerTag] = request.pool;
      inst.tags[kClusterTag] = options_.cluster_name;
      launched_[name] = {offering.zone, "", offering, request.pool, request.idempotency_token};
      out.instances.push_back(std::move(inst));
    }
    return out;
  }
  // Which names exist now (minCount 1: possibly fewer than asked; a gang's
  // minCount: all or none).
  Result<std::vector<Instance>> existing = ExistingBare(request);
  if (!existing) return existing.error().WithContext(what);
  for (Instance& inst : *existing) {
    if (std::find(names.begin(), names.end(), inst.instance_id) == names.end()) continue;
    inst.offering = offering;
    inst.tags.insert(request.tags.begin(), request.tags.end());
    launched_[inst.instance_id] = {offering.zone, "", offering, request.pool, request.idempotency_token};
    out.instances.push_back(std::move(inst));
  }
  if (out.instances.size() < names.size()) {
    const std::string short_by =
        std::to_string(out.instances.size()) + " of " + std::to_string(names.size()) + " instance(s) created";
    out.errors.push_back(op->errors.empty()
                             ? Error::Capacity(what + ": " + short_by)
                             : GcpErrorFrom(what + ": " + short_by, op->errors, op->http_error_status));
  }
  return out;
}

Result<LaunchResult> GcpProvider::Launch(const LaunchRequest& request) {
  if (request.count <= 0) return LaunchResult{};
  if (request.offerings.empty()) return Error::InvalidInput("launch: no offerings");
  if (request.idempotency_token.empty()) return Error::InvalidInput("launch: no idempotency token");
  const GcpPoolTarget target = TargetFor(request.pool);
  if (!target.uses_migs() && target.instance_template.empty()) {
    return Error::Config("pool '" + request.pool +
                         "': neither managed instance groups nor an instance template (cloud.gcp.pools." +
                         request.pool + " or cloud.gcp.instance_template)");
  }
  LaunchResult result;
  Result<std::vector<Instance>> existing =
      target.uses_migs() ? ExistingInMigs(request, target) : ExistingBare(request);
  if (!existing) return existing.error().WithContext("launch: finding the instances of earlier calls");
  std::set<std::string> taken;
  for (Instance& inst : *existing) {
    taken.insert(inst.instance_id);
    result.instances.push_back(std::move(inst));
  }
  std::optional<Error> fatal;
  for (const Offering& o : request.offerings) {
    const int missing = request.count - static_cast<int>(result.instances.size());
    if (missing <= 0) break;
    if (!o.region.empty() && !options_.region.empty() && o.region != options_.region) {
      result.errors.push_back(
          {o.Key(), Error::Config("zone " + o.zone + " is not in region " + options_.region)});
      continue;
    }
    if (o.capacity_type == CapacityType::kReserved && o.reservation_id.empty()) {
      result.errors.push_back({o.Key(), Error::InvalidInput("a reserved offering without a reservation")});
      continue;
    }
    if (std::optional<Error> blocked = QuotaBlocked(o)) {
      ++quota_skips_;
      result.errors.push_back({o.Key(), *blocked});
      continue;
    }
    std::vector<int> slots;
    for (int slot = 0; static_cast<int>(slots.size()) < missing; ++slot) {
      const std::string name = InstanceName(options_.cluster_name, request.idempotency_token, slot);
      if (taken.insert(name).second) slots.push_back(slot);
    }
    if (target.uses_migs() && !request.placement_group.empty()) {
      return Error::Config(
          "pool '" + request.pool +
          "': placement_group needs bare instances; its managed instance groups take compact "
          "placement from the GKE node pool (--placement-type=COMPACT)");
    }
    Result<Created> created =
        target.uses_migs() ? CreateInMig(request, target, o, slots) : CreateBare(request, target, o, slots);
    if (!created) {
      result.errors.push_back({o.Key(), created.error()});
      const ErrorCategory c = created.error().category();
      if (c == ErrorCategory::kCapacity || c == ErrorCategory::kConfig || c == ErrorCategory::kNotFound)
        continue;
      // Auth, throttling or an unreachable API: the next offering would fare no better.
      fatal = created.error();
      break;
    }
    for (Instance& inst : created->instances) result.instances.push_back(std::move(inst));
    for (const Error& e : created->errors) result.errors.push_back({o.Key(), e});
    for (const GcpErrorItem& q : created->quota_errors) BlockQuota(o, q);
  }
  const bool any_capacity =
      std::any_of(result.errors.begin(), result.errors.end(),
                  [](const OfferingError& e) { return e.error.category() == ErrorCategory::kCapacity; });
  if (result.instances.empty() && !any_capacity) {
    if (fatal) return *fatal;
    if (!result.errors.empty()) return result.errors.front().error;
  }
  return result;
}

std::string GcpProvider::QuotaKey(const Offering& offering) const {
  const std::string region = offering.region.empty() ? RegionOfZone(offering.zone) : offering.region;
  return region + "/" + std::string(ToString(offering.capacity_type)) + "/" +
         MachineFamily(offering.instance_type);
}

std::optional<std::pair<double, double>> GcpProvider::RegionQuota(const std::string& region,
                                                                  const std::string& metric) {
  if (metric.empty()) return std::nullopt;
  Result<json> r = client_.Call("GET", "projects/" + options_.project + "/regions/" + region);
  if (!r) return std::nullopt;
  for (const json& q : ArrayAt(*r, "quotas")) {
    if (StringAt(q, "metric") != metric) continue;
    auto number = [&](const char* key) {
      auto it = q.find(key);
      return it != q.end() && it->is_number() ? it->get<double>() : -1.0;
    };
    return std::make_pair(number("limit"), number("usage"));
  }
  return std::nullopt;
}

void GcpProvider::BlockQuota(const Offering& offering, const GcpErrorItem& error) {
  QuotaBlock b;
  b.region = offering.region.empty() ? RegionOfZone(offering.zone) : offering.region;
  b.metric = error.quota_metric;
  b.since = client_.clock().Now();
  b.first_error = error.code + (error.message.empty() ? "" : ": " + error.message);
  if (auto q = RegionQuota(b.region, b.metric)) std::tie(b.limit, b.usage) = *q;
  quota_blocks_[QuotaKey(offering)] = b;
}

std::optional<Error> GcpProvider::QuotaBlocked(const Offering& offering) {
  auto it = quota_blocks_.find(QuotaKey(offering));
  if (it == quota_blocks_.end()) return std::nullopt;
  const QuotaBlock& b = it->second;
  if (client_.clock().Now() - b.since >= options_.quota_recheck) {
    quota_blocks_.erase(it);
    return std::nullopt;
  }
  std::string now_text;
  if (b.limit >= 0) {
    auto q = RegionQuota(b.region, b.metric);
    if (q && (q->first != b.limit || q->second < b.usage)) {
      quota_blocks_.erase(it);  // raised, or capacity was freed: try again
      return std::nullopt;
    }
    if (q) now_text = " (usage " + FormatQuota(q->second) + " of limit " + FormatQuota(q->first) + ")";
  }
  return Error::Capacity("quota " + (b.metric.empty() ? std::string("?") : b.metric) + " in " + b.region +
                         " exhausted" + now_text + ": offering skipped until the quota changes (" +
                         b.first_error + ")");
}

}  // namespace gpuscaler::cloud
