// AzureProvider: names, intents, ownership and launches (the drivers'
// resource shapes are in azure_provider_aks.cc and azure_provider_vmss.cc;
// listing, termination and evictions in azure_provider_list.cc).
#include <algorithm>
#include <cctype>
#include <charconv>

#include "azure_provider_impl.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"

namespace gpuscaler::cloud {
namespace {

// Reads a group again and retries this often when its etag moved between
// the read and the write (412).
constexpr int kAzurePreconditionRetries = 3;

std::string AzureLower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::map<std::string, std::string> AzureStringMap(const nlohmann::json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it->is_string()) out[it.key()] = it->get<std::string>();
  }
  return out;
}

std::string AzureIdPart(std::string_view id, std::string_view segment) {
  const std::string lower = AzureLower(id);
  const std::string key = "/" + AzureLower(segment) + "/";
  const size_t at = lower.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return std::string(id.substr(start, id.find('/', start) - start));
}

bool IsAksManaged(const std::string& resource_group, const std::map<std::string, std::string>& tags) {
  if (AzureLower(resource_group).rfind("mc_", 0) == 0) return true;
  return std::any_of(tags.begin(), tags.end(),
                     [](const auto& tag) { return AzureLower(tag.first).rfind("aks-managed-", 0) == 0; });
}

AzureProvider::AzureProvider(AzureProviderOptions options, AzureClient& client)
    : options_(std::move(options)), client_(client) {}

std::string AzureProvider::IntentHash(std::string_view token) { return Sha256Hex(token).substr(0, 12); }

std::optional<int64_t> AzureProvider::MachineOrdinal(std::string_view name) {
  constexpr size_t kDigits = 6;
  if (name.size() < kDigits) return std::nullopt;
  int64_t value = 0;
  for (char c : name.substr(name.size() - kDigits)) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    int digit = -1;
    if (l >= '0' && l <= '9') digit = l - '0';
    if (l >= 'a' && l <= 'z') digit = l - 'a' + 10;
    if (digit < 0) return std::nullopt;
    value = value * 36 + digit;
  }
  return value;
}

std::vector<AzureProvider::Intent> AzureProvider::ParseIntents(std::string_view tag) {
  std::vector<Intent> out;
  for (std::string_view entry : Split(tag, ',')) {
    const std::vector<std::string_view> parts = Split(entry, ':');
    if (parts.size() != 3 || parts[0].empty()) continue;
    Intent i;
    i.hash = std::string(parts[0]);
    auto number = [](std::string_view text, auto* out_value) {
      return std::from_chars(text.data(), text.data() + text.size(), *out_value).ec == std::errc();
    };
    if (!number(parts[1], &i.mark) || !number(parts[2], &i.count)) continue;
    out.push_back(std::move(i));
  }
  return out;
}

std::string AzureProvider::FormatIntents(const std::vector<Intent>& intents) {
  std::string out;
  const size_t first = intents.size() > kAzureIntentsKept ? intents.size() - kAzureIntentsKept : 0;
  for (size_t i = first; i < intents.size(); ++i) {
    if (!out.empty()) out += ',';
    out += intents[i].hash + ":" + std::to_string(intents[i].mark) + ":" + std::to_string(intents[i].count);
  }
  return out;
}

std::string AzureProvider::GroupPath(const std::string& name) const {
  std::string path = "subscriptions/" + options_.subscription_id + "/resourceGroups/" + options_.resource_group;
  if (options_.driver == AzureDriver::kAks) {
    return path + "/providers/Microsoft.ContainerService/managedClusters/" + options_.aks_cluster + "/agentPools/" +
           name;
  }
  return path + "/providers/Microsoft.Compute/virtualMachineScaleSets/" + name;
}

Result<AzureProvider::Group> AzureProvider::ReadGroup(const std::string& name) {
  const bool aks = options_.driver == AzureDriver::kAks;
  Result<AzureResponse> got =
      client_.Call("GET", GroupPath(name), aks ? kContainerServiceApiVersion : kComputeApiVersion);
  if (!got) return got.error();
  return aks ? ParseAgentPool(name, got->body) : ParseScaleSet(name, got->body);
}

Status AzureProvider::CheckGroup(const Group& group, const std::string& pool) const {
  const std::string kind = options_.driver == AzureDriver::kAks ? "agent pool '" : "scale set '";
  const std::string what = kind + group.name + "'";
  if (options_.driver == AzureDriver::kVmss && IsAksManaged(group.resource_group, group.tags)) {
    return Error::Config(what + " is in an AKS-managed node resource group (" + group.resource_group +
                         "): AKS owns its capacity; use cloud.azure.driver: aks and name its agent pool");
  }
  if (auto it = group.tags.find(kAzureClusterTag); it == group.tags.end() || it->second != options_.cluster_name) {
    return Error::Config(what + " is not tagged " + kAzureClusterTag + "=" + options_.cluster_name +
                         " (tag it to let this installation scale it)");
  }
  if (auto it = group.tags.find(kAzurePoolTag); it != group.tags.end() && !pool.empty() && it->second != pool) {
    return Error::Config(what + " is pool '" + it->second + "' (its " + kAzurePoolTag + " tag), not '" + pool + "'");
  }
  if (group.autoscaling) {
    return Error::Config(what + " has enableAutoScaling: the cluster autoscaler owns its count (turn it off)");
  }
  if (group.spot && EqualsIgnoreCase(group.eviction_policy, "Deallocate")) {
    return Error::Config(what + " is a Spot group with eviction policy Deallocate (evicted VMs keep counting as "
                                "capacity); gpuscaler scales Spot groups with eviction policy Delete");
  }
  return Status::Ok();
}

bool AzureProvider::Matches(const Group& group, const Offering& offering) const {
  if (!EqualsIgnoreCase(group.vm_size, offering.instance_type)) return false;
  if (offering.capacity_type == CapacityType::kReserved) return false;
  if (group.spot != (offering.capacity_type == CapacityType::kSpot)) return false;
  if (group.zones.empty() || offering.zone.empty() || offering.zone == options_.location) return true;
  const size_t dash = offering.zone.rfind('-');
  const std::string zone = dash == std::string::npos ? offering.zone : offering.zone.substr(dash + 1);
  return std::find(group.zones.begin(), group.zones.end(), zone) != group.zones.end();
}

std::vector<AzureProvider::Member> AzureProvider::IntentMembers(const std::vector<Intent>& intents,
                                                                const std::string& hash,
                                                                std::vector<Member> members) const {
  auto it = std::find_if(intents.begin(), intents.end(), [&](const Intent& i) { return i.hash == hash; });
  if (it == intents.end()) return {};
  // A later raise's instances start above its own mark.
  std::optional<int64_t> below;
  if (auto next = std::next(it); next != intents.end()) below = next->mark;
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return std::tie(a.ordinal, a.id) < std::tie(b.ordinal, b.id); });
  std::vector<Member> out;
  for (Member& m : members) {
    if (m.ordinal <= it->mark || (below && m.ordinal > *below)) continue;
    if (static_cast<int>(out.size()) == it->count) break;
    out.push_back(std::move(m));
  }
  return out;
}

Result<LaunchResult> AzureProvider::LaunchOn(const LaunchRequest& request, const Offering& offering,
                                             const std::string& group_name, int missing) {
  const std::string hash = IntentHash(request.idempotency_token);
  const std::string what = (options_.driver == AzureDriver::kAks ? "agent pool " : "scale set ") + group_name;
  LaunchResult result;
  bool settled = false;
  for (int attempt = 0; attempt <= kAzurePreconditionRetries && !settled; ++attempt) {
    Result<Group> group = ReadGroup(group_name);
    if (!group) return group.error().WithContext(what);
    if (Status s = CheckGroup(*group, request.pool); !s.ok()) return s.error();
    std::vector<Intent> intents = ParseIntents(group->tags[kAzureIntentsTag]);
    Result<std::vector<Member>> members = Members(*group);
    if (!members) return members.error().WithContext(what);
    const bool replay =
        std::any_of(intents.begin(), intents.end(), [&](const Intent& i) { return i.hash == hash; });
    const int before = group->count;
    if (!replay) {
      // Record the launch in the same write that raises the count.
      int64_t mark = -1;
      for (const Member& m : *members) mark = std::max(mark, m.ordinal);
      intents.push_back({hash, mark, missing});
      std::map<std::string, std::string> tags = group->tags;
      tags[kAzureIntentsTag] = FormatIntents(intents);
      intents = ParseIntents(tags[kAzureIntentsTag]);
      Result<AzureOutcome> wrote = WriteCount(&*group, before + missing, tags);
      if (wrote && wrote->precondition_failed) continue;
      if (!wrote) {
        if (wrote.error().category() != ErrorCategory::kCapacity) return wrote.error().WithContext(what);
        // The raise failed for want of capacity: keep what came up, give back the rest.
        Result<Group> now = ReadGroup(group_name);
        Result<std::vector<Member>> after = now ? Members(*now) : Result<std::vector<Member>>(now.error());
        Error error = wrote.error().WithContext(what);
        if (after) {
          std::vector<Member> came = IntentMembers(ParseIntents(now->tags[kAzureIntentsTag]), hash, *after);
          std::vector<Member> ok;
          for (Member& m : came) {
            if (!m.failed) ok.push_back(m);
          }
          if (Status s = GiveBack(&*now, before, came); !s.ok())
            error = error.WithContext("giving back the count not granted also failed (" + s.error().message() + ")");
          for (const Member& m : ok) result.instances.push_back(ToInstance(request.pool, *now, m));
        }
        result.errors.push_back({offering.Key(), error});
        settled = true;
        break;
      }
      members = Members(*group);
      if (!members) return members.error().WithContext(what);
    }
    for (const Member& m : IntentMembers(intents, hash, *members)) {
      if (m.failed) continue;
      result.instances.push_back(ToInstance(request.pool, *group, m));
    }
    settled = true;
  }
  if (!settled) return Error::Transient(what + ": changed between every read and write (HTTP 412)");
  tokens_[hash] = request.idempotency_token;
  for (Instance& inst : result.instances) {
    launched_[inst.instance_id] = request.idempotency_token;
    inst.tags.insert(request.tags.begin(), request.tags.end());
    inst.tags[kIntentTag] = request.idempotency_token;
    inst.offering = offering;
  }
  return result;
}

Status AzureProvider::GiveBack(Group* group, int before, const std::vector<Member>& came) {
  std::vector<Member> failed;
  int up = 0;
  for (const Member& m : came) {
    if (m.failed)
      failed.push_back(m);
    else
      ++up;
  }
  if (!failed.empty()) {
    if (Status s = DeleteMembers(*group, failed); !s.ok()) return s;
  }
  for (int attempt = 0; attempt <= kAzurePreconditionRetries; ++attempt) {
    Result<Group> now = ReadGroup(group->name);
    if (!now) return now.error();
    *group = std::move(now).value();
    if (group->count <= before + up) return Status::Ok();
    Result<AzureOutcome> wrote = WriteCount(group, before + up, group->tags);
    if (!wrote) return wrote.error();
    if (!wrote->precondition_failed) return Status::Ok();
  }
  return Error::Transient(group->name + ": changed under every write");
}

Result<LaunchResult> AzureProvider::Launch(const LaunchRequest& request) {
  if (request.count <= 0) return LaunchResult{};
  if (request.offerings.empty()) return Error::InvalidInput("launch: no offerings");
  if (request.idempotency_token.empty()) return Error::InvalidInput("launch: no idempotency token");
  auto target = options_.pools.find(request.pool);
  if (target == options_.pools.end() || target->second.groups.empty()) {
    return Error::Config("pool '" + request.pool + "': no " +
                         (options_.driver == AzureDriver::kAks ? "agent pools" : "scale sets") +
                         " named for it (cloud.azure.pools." + request.pool + ")");
  }
  std::map<std::string, Result<Group>> groups;  // read once per launch
  for (const std::string& name : target->second.groups) {
    Result<Group> g = ReadGroup(name);
    // Unreadable for want of rights, throttled or unreachable: the launch
    // cannot tell which group an offering belongs to, and fails whole.
    if (!g && g.error().category() != ErrorCategory::kNotFound) return g.error().WithContext("launch: " + name);
    groups.emplace(name, std::move(g));
  }
  LaunchResult result;
  std::optional<Error> fatal;
  for (const Offering& o : request.offerings) {
    const int missing = request.count - static_cast<int>(result.instances.size());
    if (missing <= 0) break;
    std::string chosen;
    std::string why;
    for (const std::string& name : target->second.groups) {
      const Result<Group>& g = groups.at(name);
      if (!g) {
        if (why.empty()) why = g.error().message();
        continue;
      }
      if (Matches(*g, o)) {
        chosen = name;
        break;
      }
    }
    if (chosen.empty()) {
      result.errors.push_back(
          {o.Key(), Error::Config("pool '" + request.pool + "': no " +
                                  (options_.driver == AzureDriver::kAks ? "agent pool" : "scale set") +
                                  " of VM size " + o.instance_type + ", " +
                                  (o.capacity_type == CapacityType::kSpot ? "Spot" : "Regular") +
                                  " priority, in zone " + o.zone + (why.empty() ? "" : " (" + why + ")"))});
      continue;
    }
    Result<LaunchResult> part = LaunchOn(request, o, chosen, missing);
    if (!part) {
      result.errors.push_back({o.Key(), part.error()});
      const ErrorCategory c = part.error().category();
      if (c == ErrorCategory::kCapacity || c == ErrorCategory::kConfig || c == ErrorCategory::kNotFound) continue;
      // Auth, throttling or an unreachable API: the next offering would fare no better.
      fatal = part.error();
      break;
    }
    for (Instance& inst : part->instances) result.instances.push_back(std::move(inst));
    for (OfferingError& e : part->errors) result.errors.push_back(std::move(e));
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

Instance AzureProvider::ToInstance(const std::string& pool, const Group& group, const Member& member) const {
  Instance inst;
  inst.instance_id = member.id;
  inst.pool = pool;
  inst.offering.instance_type = group.vm_size;
  inst.offering.region = options_.location;
  inst.offering.zone = member.zone.empty() ? options_.location : options_.location + "-" + member.zone;
  inst.offering.capacity_type = group.spot ? CapacityType::kSpot : CapacityType::kOnDemand;
  if (member.created) {
    inst.launch_time = *member.created;
  } else if (auto it = first_seen_.find(member.id); it != first_seen_.end()) {
    inst.launch_time = it->second;
  } else {
    inst.launch_time = client_.clock().WallNow();
  }
  inst.state = member.state;
  inst.tags[kOwnerTag] = pool;
  inst.tags[kClusterTag] = options_.cluster_name;
  if (auto it = launched_.find(member.id); it != launched_.end()) inst.tags[kIntentTag] = it->second;
  return inst;
}

Result<std::vector<SpotPrice>> AzureProvider::SpotPrices(WallTime since) {
  (void)since;
  return std::vector<SpotPrice>{};
}

}  // namespace gpuscaler::cloud
