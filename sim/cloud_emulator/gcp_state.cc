// The Compute Engine emulator's state: instances and their lifecycle,
// capacity and quota, managed-group members, operations, preemptions.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {
namespace {

// "a2-highgpu-4g" -> 4; 0 when the name does not end in "-<N>g".
int GpuSuffix(const std::string& mt) {
  const size_t dash = mt.rfind('-');
  if (dash == std::string::npos || mt.size() < dash + 3 || mt.back() != 'g') return 0;
  int n = 0;
  for (size_t i = dash + 1; i + 1 < mt.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(mt[i]))) return 0;
    n = n * 10 + (mt[i] - '0');
  }
  return n;
}

// "g2-standard-24" -> 24.
int SizeSuffix(const std::string& mt) {
  const size_t dash = mt.rfind('-');
  if (dash == std::string::npos) return 0;
  int n = 0;
  for (size_t i = dash + 1; i < mt.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(mt[i]))) return 0;
    n = n * 10 + (mt[i] - '0');
  }
  return n;
}

}  // namespace

std::pair<std::string, int> GcpMachineGpus(const GcpScenario& s, const std::string& mt) {
  if (auto it = s.machine_gpus.find(mt); it != s.machine_gpus.end()) return it->second;
  auto starts = [&](const char* prefix) { return mt.rfind(prefix, 0) == 0; };
  if (starts("a2-ultragpu-")) return {"NVIDIA_A100_80GB_GPUS", GpuSuffix(mt)};
  if (starts("a2-highgpu-") || starts("a2-megagpu-")) return {"NVIDIA_A100_GPUS", GpuSuffix(mt)};
  if (starts("a3-megagpu-")) return {"NVIDIA_H100_MEGA_GPUS", GpuSuffix(mt)};
  if (starts("a3-highgpu-") || starts("a3-edgegpu-")) return {"NVIDIA_H100_GPUS", GpuSuffix(mt)};
  if (starts("a3-ultragpu-")) return {"NVIDIA_H200_GPUS", GpuSuffix(mt)};
  if (starts("g2-standard-")) {
    // G2: 1 L4 up to 32 vCPUs, then 2 / 4 / 8.
    const int size = SizeSuffix(mt);
    const int gpus = size == 24 ? 2 : size == 48 ? 4 : size == 96 ? 8 : size > 0 ? 1 : 0;
    return {"NVIDIA_L4_GPUS", gpus};
  }
  if (starts("g4-standard-")) {
    const int size = SizeSuffix(mt);
    return {"NVIDIA_RTX_PRO_6000_GPUS", size >= 48 ? size / 48 : 0};
  }
  return {"", 0};
}

GcpEmulator::GcpEmulator(GcpScenario scenario, const Clock& clock)
    : EmulatorCore(std::move(scenario), clock) {
  for (const GcpPreemption& p : scenario_.preemptions) preemptions_left_.push_back(p.count);
  std::lock_guard lock(mu_);
  for (const GcpManagedGroup& spec : scenario_.groups) {
    Group g;
    g.spec = spec;
    if (g.spec.base_instance_name.empty()) g.spec.base_instance_name = spec.name;
    if (g.spec.instance_template.empty()) g.spec.instance_template = spec.name + "-template";
    g.id = NewId();
    g.created = start_;
    groups_.push_back(std::move(g));
  }
  for (size_t r = 0; r < scenario_.reservations.size(); ++r) reservation_ids_.push_back(NewId());
  // The initial target size, as members named like a resize would.
  for (Group& g : groups_) {
    for (int k = 0; k < g.spec.target_size; ++k) {
      char suffix[8];
      std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(NewId() & 0xffff));
      Member m;
      m.name = g.spec.base_instance_name + "-" + suffix;
      m.next_try = start_;
      g.members.push_back(std::move(m));
    }
  }
  AdvanceLocked(start_);
}

uint64_t GcpEmulator::NewId() {
  // Compute Engine ids are unsigned 64-bit numbers of about 19 digits.
  return (NextIdBits() % 9000000000000000000ULL) +
         1000000000000000000ULL;
}

std::string GcpEmulator::Url(const std::string& path) const {
  return std::string(gcp::kComputeBase) + "projects/" + scenario_.project + "/" + path;
}

std::string GcpEmulator::StatusOf(const Instance& i, WallTime now) const {
  if (i.end_at && now >= *i.end_at) return i.remove_at_end ? "DELETED" : i.suspend ? "SUSPENDED" : "TERMINATED";
  if (i.stop_at && now >= *i.stop_at) return i.suspend ? "SUSPENDING" : "STOPPING";
  if (now < i.staged_at) return "PROVISIONING";
  if (now < i.running_at) return "STAGING";
  return "RUNNING";
}

bool GcpEmulator::Live(const Instance& i, WallTime now) const {
  // A stopped or suspended VM holds no host, quota or reservation slot.
  const std::string s = StatusOf(i, now);
  return s != "DELETED" && s != "TERMINATED" && s != "SUSPENDED";
}

std::vector<std::pair<std::string, int>> GcpEmulator::GpusOf(
    const std::string& machine_type, const std::string& model,
    const std::vector<std::pair<std::string, int>>& accelerators) const {
  std::vector<std::pair<std::string, int>> out;
  const std::string prefix = model == "SPOT" ? "PREEMPTIBLE_" : "";
  auto [metric, count] = GcpMachineGpus(scenario_, machine_type);
  if (count > 0) out.emplace_back(prefix + metric, count);
  for (const auto& [type, n] : accelerators) {
    // "nvidia-tesla-t4" -> NVIDIA_T4_GPUS, "nvidia-l4" -> NVIDIA_L4_GPUS.
    std::string m = type;
    if (size_t t = m.find("tesla-"); t != std::string::npos) m.erase(t, 6);
    for (char& c : m) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out.emplace_back(prefix + m + "_GPUS", n);
  }
  return out;
}

std::optional<GcpEmulator::OpError> GcpEmulator::Refusal(const std::string& zone,
                                                         const std::string& machine_type,
                                                         const std::string& model,
                                                         const std::vector<std::pair<std::string, int>>& gpus,
                                                         WallTime now) const {
  for (const GcpCapacityLimit& l : scenario_.capacity) {
    if (l.from && now < start_ + *l.from) continue;
    if (l.until && now >= start_ + *l.until) continue;
    auto matches = [&](const std::string& mt, const std::string& z, const std::string& pm) {
      return (l.machine_type.empty() || l.machine_type == mt) && (l.zone.empty() || l.zone == z) &&
             (l.provisioning_model.empty() || l.provisioning_model == pm);
    };
    if (!matches(machine_type, zone, model)) continue;
    int live = 0;
    for (const Instance& i : instances_) {
      // Reserved capacity is held apart from the zone's pool.
      if (Live(i, now) && !i.reservation &&
          matches(i.info.machine_type, i.info.zone, i.info.provisioning_model))
        ++live;
    }
    if (live < l.limit) continue;
    const std::string where = "projects/" + scenario_.project + "/zones/" + zone;
    if (l.error_code == "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS") {
      return OpError{
          l.error_code,
          "The zone '" + where +
              "' does not have enough resources available to fulfill the request.  '(resource "
              "type:compute)'.",
          R"([{"errorInfo":{"reason":"resource_availability","domain":"compute.googleapis.com","metadatas":{"zone":")" +
              zone + R"(","vmType":")" + machine_type + R"(","attachment":")" + model + R"("}}}])"};
    }
    return OpError{l.error_code,
                   "The zone '" + where +
                       "' does not have enough resources available to fulfill the request.  Try a "
                       "different zone, or try again later.",
                   ""};
  }
  const std::string region = gcp::RegionOf(zone);
  for (const auto& [metric, count] : gpus) {
    const std::optional<double> limit = QuotaLimit(region, metric, now);
    if (!limit || QuotaUsage(region, metric, now) + count <= *limit) continue;
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", *limit);
    std::string lower = metric;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string limit_name = metric;
    std::replace(limit_name.begin(), limit_name.end(), '_', '-');
    return OpError{"QUOTA_EXCEEDED",
                   "Quota '" + metric + "' exceeded.  Limit: " + text + " in region " + region + ".",
                   R"([{"quotaInfo":{"metricName":"compute.googleapis.com/)" + lower + R"(","limitName":")" +
                       limit_name + R"(-per-project-region","dimensions":{"region":")" + region +
                       R"("},"limit":)" + text + "}}]"};
  }
  return std::nullopt;
}

std::optional<double> GcpEmulator::QuotaLimit(const std::string& region, const std::string& metric,
                                              WallTime now) const {
  const GcpQuota* best = nullptr;
  for (const GcpQuota& q : scenario_.quotas) {
    if (q.region != region || q.metric != metric || now < start_ + q.from) continue;
    if (best == nullptr || q.from >= best->from) best = &q;
  }
  if (best == nullptr) return std::nullopt;
  return best->limit;
}

double GcpEmulator::QuotaUsage(const std::string& region, const std::string& metric, WallTime now) const {
  double used = 0;
  for (const Instance& i : instances_) {
    // A reservation's quota is charged when it is made, not by its consumers.
    if (!Live(i, now) || i.reservation || gcp::RegionOf(i.info.zone) != region) continue;
    for (const auto& [m, n] : i.gpus) {
      if (m == metric) used += n;
    }
  }
  return used;
}

size_t GcpEmulator::CreateInstance(const std::string& zone, const std::string& name,
                                   const std::string& machine_type, const std::string& model,
                                   const std::string& action,
                                   const std::map<std::string, std::string>& labels, const std::string& group,
                                   std::vector<std::pair<std::string, int>> accelerators, WallTime now,
                                   std::vector<std::pair<std::string, std::string>> metadata) {
  Instance i;
  i.metadata = std::move(metadata);
  i.info.name = name;
  i.info.zone = zone;
  i.info.machine_type = machine_type;
  i.info.provisioning_model = model;
  i.info.termination_action = action;
  i.info.group = group;
  i.info.labels = labels;
  i.id = NewId();
  i.created = now;
  i.staged_at = now + scenario_.operation_latency;
  i.running_at = i.staged_at + scenario_.boot_latency;
  i.gpus = GpusOf(machine_type, model, accelerators);
  i.accelerators = std::move(accelerators);
  i.info.status = StatusOf(i, now);
  instances_.push_back(std::move(i));
  ++stats_.created;
  return instances_.size() - 1;
}

void GcpEmulator::DeleteInstance(Instance& i, WallTime now) {
  if (i.end_at && i.remove_at_end) return;  // already going away
  if (!i.stop_at || *i.stop_at > now) i.stop_at = now;
  i.end_at = now + scenario_.delete_latency;
  i.remove_at_end = true;
  i.suspend = false;  // a suspended VM being deleted shows STOPPING
}

void GcpEmulator::PreemptLocked(Instance& i, Seconds notice, WallTime at) {
  i.stop_at = at;
  i.end_at = at + notice;
  // A managed member is recreated by its group, so its VM goes away.
  i.remove_at_end = i.info.termination_action == "DELETE" || !i.info.group.empty();
  i.preempted = true;
  ++stats_.preempted;
  Operation& op = NewOperation(i.info.zone, "compute.instances.preempted",
                               Url("zones/" + i.info.zone + "/instances/" + i.info.name), i.id, "", at);
  op.done_at = at;
  op.user = "system";
  op.status_message = "Instance was preempted.";
}

GcpEmulator::Instance* GcpEmulator::FindInstance(const std::string& zone, const std::string& name) {
  // The newest instance of that name (a name is reused after deletion).
  for (auto it = instances_.rbegin(); it != instances_.rend(); ++it) {
    if (it->info.zone == zone && it->info.name == name) return it->info.deleted ? nullptr : &*it;
  }
  return nullptr;
}

GcpEmulator::Group* GcpEmulator::FindGroup(const std::string& zone, const std::string& name) {
  for (Group& g : groups_) {
    if (g.spec.zone == zone && g.spec.name == name) return &g;
  }
  return nullptr;
}

GcpEmulator::Operation& GcpEmulator::NewOperation(const std::string& zone, const std::string& type,
                                                  const std::string& target_link, uint64_t target_id,
                                                  const std::string& request_id, WallTime now) {
  Operation op;
  op.id = NewId();
  char name[64];
  std::snprintf(name, sizeof name, "operation-%" PRId64 "-%012" PRIx64,
                static_cast<int64_t>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count()),
                static_cast<uint64_t>(SplitMix(op.id) & 0xffffffffffffULL));
  op.name = name;
  op.zone = zone;
  op.type = type;
  op.target_link = target_link;
  op.target_id = target_id;
  op.request_id = request_id;
  op.insert_time = now;
  op.done_at = now + scenario_.operation_latency;
  operations_.push_back(std::move(op));
  const size_t index = operations_.size() - 1;
  ops_by_name_[zone + "/" + operations_.back().name] = index;
  if (!request_id.empty()) ops_by_request_id_[request_id] = index;
  return operations_.back();
}

void GcpEmulator::TryCreateMember(Group& g, Member& m, WallTime now) {
  const GcpManagedGroup& s = g.spec;
  const auto gpus = GpusOf(s.machine_type, s.provisioning_model, {});
  std::optional<OpError> refused;
  const std::optional<size_t> reservation =
      PickReservation(s.zone, s.machine_type, s.provisioning_model, s.reservation_affinity, now, &refused);
  if (!refused && !reservation) refused = Refusal(s.zone, s.machine_type, s.provisioning_model, gpus, now);
  if (refused) {
    m.last_errors = {*refused};
    m.next_try = now + scenario_.mig_retry_interval;
    return;
  }
  m.last_errors.clear();
  m.instance = CreateInstance(s.zone, m.name, s.machine_type, s.provisioning_model, s.termination_action,
                              s.labels, s.name, {}, now, m.metadata);
  instances_[*m.instance].reservation_affinity = s.reservation_affinity;
  instances_[*m.instance].reservation = reservation;
}

void GcpEmulator::AdvanceLocked(WallTime now) {
  for (size_t k = 0; k < scenario_.preemptions.size(); ++k) {
    const GcpPreemption& p = scenario_.preemptions[k];
    const WallTime at = start_ + p.at;
    if (now < at || preemptions_left_[k] <= 0) continue;
    for (Instance& i : instances_) {
      if (preemptions_left_[k] <= 0) break;
      if (i.info.provisioning_model != "SPOT" || StatusOf(i, now) != "RUNNING") continue;
      if (!p.machine_type.empty() && p.machine_type != i.info.machine_type) continue;
      if (!p.zone.empty() && p.zone != i.info.zone) continue;
      PreemptLocked(i, p.notice, std::max(at, i.running_at));
      --preemptions_left_[k];
    }
  }
  for (Instance& i : instances_) {
    i.info.status = StatusOf(i, now);
    if (i.info.status == "DELETED") {
      i.info.deleted = true;
      i.info.status = "TERMINATED";
    }
  }
  for (Group& g : groups_) {
    for (auto it = g.members.begin(); it != g.members.end();) {
      Member& m = *it;
      if (m.instance && instances_[*m.instance].info.deleted) {
        if (m.deleting) {
          it = g.members.erase(it);
          continue;
        }
        // Preempted: the group recreates the VM under the same name.
        m.instance.reset();
        m.recreating = true;
        m.standby = m.waking = Standby::kNone;
        m.next_try = now;
      }
      if (!m.instance && !m.deleting && now >= m.next_try) TryCreateMember(g, m, now);
      AdvanceStandby(g, m, now);
      ++it;
    }
  }
}

Status GcpEmulator::Preempt(const std::string& zone, const std::string& name, Seconds notice) {
  std::lock_guard lock(mu_);
  const WallTime now = clock_.WallNow();
  AdvanceLocked(now);
  Instance* i = FindInstance(zone, name);
  if (i == nullptr || i->info.provisioning_model != "SPOT" || StatusOf(*i, now) != "RUNNING") {
    return Error::NotFound("no RUNNING Spot VM " + zone + "/" + name);
  }
  PreemptLocked(*i, notice, now);
  AdvanceLocked(now);
  return Status();
}

}  // namespace gpuscaler::sim
