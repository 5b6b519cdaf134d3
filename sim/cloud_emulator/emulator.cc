#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {

CloudEmulator::CloudEmulator(EmulatorScenario scenario, const Clock& clock)
    : EmulatorCore(std::move(scenario), clock) {
  for (const ScriptedInterruption& i : scenario_.interruptions) interruptions_left_.push_back(i.count);
  for (const ScriptedGroup& spec : scenario_.groups) {
    Group g;
    g.spec = spec;
    g.created = start_;
    g.arn = "arn:aws:autoscaling:" + scenario_.region + ":" + scenario_.account_id + ":autoScalingGroup:" +
            std::to_string(groups_.size() + 1) + ":autoScalingGroupName/" + spec.name;
    for (const auto& [key, value] : spec.tags) g.propagate[key] = spec.propagate_at_launch;
    groups_.push_back(std::move(g));
  }
  std::lock_guard lock(mu_);
  for (Group& g : groups_) ReconcileGroup(g, start_);
}

std::string CloudEmulator::NewId(std::string_view prefix, int hex_digits) {
  const uint64_t v = NextIdBits();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%0*" PRIx64, hex_digits > 16 ? 16 : hex_digits, v);
  std::string hex = buf;
  while (static_cast<int>(hex.size()) < hex_digits) hex = "0" + hex;
  return std::string(prefix) + hex.substr(0, hex_digits);
}

Status CloudEmulator::Interrupt(const std::string& instance_id, Seconds notice) {
  std::lock_guard lock(mu_);
  const WallTime now = clock_.WallNow();
  AdvanceLocked(now);
  return InterruptLocked(instance_id, notice, now);
}

std::string CloudEmulator::Uuid() {
  return NewId("", 8) + "-" + NewId("", 4) + "-" + NewId("", 4) + "-" + NewId("", 4) + "-" + NewId("", 12);
}

Status CloudEmulator::InterruptLocked(const std::string& instance_id, Seconds notice, WallTime now) {
  auto it = by_id_.find(instance_id);
  if (it == by_id_.end()) return Error::NotFound("no instance " + instance_id);
  Instance& i = instances_[it->second];
  if (i.info.state != "pending" && i.info.state != "running") return Error::NotFound(instance_id + " is not live");
  nlohmann::json event = {
      {"version", "0"},
      {"id", Uuid()},
      {"detail-type", "EC2 Spot Instance Interruption Warning"},
      {"source", "aws.ec2"},
      {"account", scenario_.account_id},
      {"time", FormatRfc3339(now)},
      {"region", scenario_.region},
      {"resources", {"arn:aws:ec2:" + scenario_.region + ":" + scenario_.account_id + ":instance/" + instance_id}},
      {"detail",
       {{"instance-id", instance_id},
        {"instance-action", i.info.interruption_behavior.empty() ? "terminate" : i.info.interruption_behavior}}}};
  Enqueue(event.dump(), now);
  pending_interruptions_.push_back({instance_id, now + notice});
  return Status::Ok();
}

void CloudEmulator::Enqueue(std::string body, WallTime now) {
  Message m;
  m.id = Uuid();
  m.body = std::move(body);
  m.visible_at = now;
  queue_.push_back(std::move(m));
}

void CloudEmulator::AdvanceLocked(WallTime now) {
  for (Instance& i : instances_) {
    if (i.info.state == "pending" && now >= i.running_at) i.info.state = "running";
    if (i.info.state == "stopping" && i.stopped_at && now >= *i.stopped_at) i.info.state = "stopped";
  }
  // A scripted interruption stays armed from `at` until it has hit `count`
  // instances, so it also catches spot instances launched later.
  for (size_t k = 0; k < scenario_.interruptions.size(); ++k) {
    const ScriptedInterruption& s = scenario_.interruptions[k];
    if (interruptions_left_[k] <= 0 || now < start_ + s.at) continue;
    std::vector<std::string> victims;
    for (const Instance& i : instances_) {
      if (static_cast<int>(victims.size()) == interruptions_left_[k]) break;
      if (i.info.lifecycle != CapacityType::kSpot || (i.info.state != "running" && i.info.state != "pending")) continue;
      if (!s.instance_type.empty() && s.instance_type != i.info.instance_type) continue;
      if (!s.zone.empty() && s.zone != i.info.zone) continue;
      const bool already = std::any_of(pending_interruptions_.begin(), pending_interruptions_.end(),
                                       [&](const auto& p) { return p.instance_id == i.info.instance_id; });
      if (already) continue;
      victims.push_back(i.info.instance_id);
    }
    for (const std::string& id : victims) {
      if (InterruptLocked(id, s.notice, now).ok()) --interruptions_left_[k];
    }
  }
  std::vector<size_t> replaced;  // instances of persistent Spot requests
  for (auto it = pending_interruptions_.begin(); it != pending_interruptions_.end();) {
    if (now >= it->terminate_at) {
      auto idx = by_id_.find(it->instance_id);
      if (idx != by_id_.end()) {
        Instance& i = instances_[idx->second];
        // Interruption behavior stop or hibernate: a running instance is
        // stopped (one the owner stopped meanwhile stays so), and EC2 starts
        // it again later.
        const std::string& behavior = i.info.interruption_behavior;
        if (behavior == "stop" || behavior == "hibernate") {
          if (IsLive(i.info)) {
            StopInstance(i, behavior == "hibernate", true, it->terminate_at);
            i.info.interrupted = true;
          }
        } else {
          if (IsLive(i.info)) replaced.push_back(idx->second);
          Terminate(i, it->terminate_at);
        }
      }
      it = pending_interruptions_.erase(it);
    } else {
      ++it;
    }
  }
  for (size_t index : replaced) ReplacePersistentSpot(instances_[index], now);
  RestartInterruptedSpot(now);
  ReclaimCapacityBlocks(now);
  for (Instance& i : instances_) {
    if (i.info.state == "shutting-down" && i.shutting_down_at && now >= *i.shutting_down_at + scenario_.terminate_latency) {
      i.info.state = "terminated";
      i.terminated_at = *i.shutting_down_at + scenario_.terminate_latency;
    }
  }
  for (Group& g : groups_) ReconcileGroup(g, now);
}

int CloudEmulator::LiveCount(const std::string& type, const std::string& zone, CapacityType lifecycle) const {
  int n = 0;
  for (const Instance& i : instances_) {
    if ((i.info.state == "pending" || i.info.state == "running") && i.info.instance_type == type &&
        i.info.zone == zone && i.info.lifecycle == lifecycle) {
      ++n;
    }
  }
  return n;
}

std::optional<std::pair<int, std::string>> CloudEmulator::Room(const std::string& type, const std::string& zone,
                                                               CapacityType lifecycle, WallTime now) const {
  std::optional<std::pair<int, std::string>> best;
  for (const CapacityLimit& c : scenario_.capacity) {
    if (!c.instance_type.empty() && c.instance_type != type) continue;
    if (!c.zone.empty() && c.zone != zone) continue;
    if (c.capacity_type && *c.capacity_type != lifecycle) continue;
    if (c.from && now < start_ + *c.from) continue;
    if (c.until && now >= start_ + *c.until) continue;
    const int room = std::max(0, c.limit - LiveCount(type, zone, lifecycle));
    if (!best || room < best->first) best = std::make_pair(room, c.error_code);
  }
  return best;
}

CloudEmulator::Instance& CloudEmulator::Launch(const std::string& type, const std::string& zone,
                                               const std::string& subnet, CapacityType lifecycle,
                                               const std::map<std::string, std::string>& tags,
                                               const std::string& client_token, const std::string& reservation,
                                               WallTime now) {
  Instance i;
  i.info.instance_id = NewId("i-", 17);
  i.info.instance_type = type;
  i.info.zone = zone;
  i.info.subnet_id = subnet;
  if (i.info.subnet_id.empty()) {
    for (const auto& [id, z] : scenario_.subnets) {
      if (z == zone) {
        i.info.subnet_id = id;
        break;
      }
    }
  }
  i.info.lifecycle = lifecycle;
  i.info.state = "pending";
  i.info.launch_time = now;
  i.info.tags = tags;
  i.info.client_token = client_token;
  i.running_at = now + scenario_.launch_latency;
  i.reservation_id = reservation;
  by_id_[i.info.instance_id] = instances_.size();
  instances_.push_back(std::move(i));
  ++stats_.launched;
  return instances_.back();
}

void CloudEmulator::Terminate(Instance& i, WallTime now) {
  if (IsLive(i.info) || i.info.state == "stopping" || i.info.state == "stopped") {
    i.info.state = "shutting-down";
    i.shutting_down_at = now;
    i.stopped_at.reset();
  }
}

}  // namespace gpuscaler::sim
