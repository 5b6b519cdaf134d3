// FakeCloudProvider: instances in memory; records every call; capacity
// errors per offering key; one-shot errors; a hook run inside Launch (e.g. to
// check that the intent is already in the store).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"

namespace gpuscaler::testing {

class FakeCloudProvider final : public CloudProvider {
 public:
  explicit FakeCloudProvider(const Clock& clock) : clock_(clock) {}

  std::vector<LaunchRequest> launches;                // every call, in order
  std::vector<std::vector<std::string>> terminations;  // every call, in order
  std::vector<std::vector<std::string>> stops;         // every Stop call, in order
  std::vector<std::vector<std::string>> starts;        // every Start call, in order
  struct WarmPoolCall {
    std::string group;
    int size = 0;
    WarmState state = WarmState::kStopped;
  };
  std::vector<WarmPoolCall> warm_pools;                // every PutWarmPool call, in order
  std::optional<Error> next_launch_error;              // used once, then cleared
  std::optional<Error> next_list_error;                // used once, then cleared
  std::optional<Error> next_terminate_error;           // used once, then cleared
  std::set<std::string> no_capacity;                   // offering keys that always fail
  std::vector<InterruptionNotice> notices;             // returned by the next poll
  std::vector<SpotPrice> prices;                       // all changes ever, ascending time
  std::optional<Error> prices_error;                   // every SpotPrices call fails while set
  std::vector<InterruptionNotice> acknowledged;        // every AcknowledgeInterruptions, in order
  // What ListReservations answers; unset: the provider has no reserved
  // capacity (CloudProvider's answer, a kConfig error).
  std::optional<std::vector<Reservation>> reservations;
  std::function<void(const LaunchRequest&)> on_launch;
  std::map<std::string, Instance> instances;           // live, by id
  std::map<std::string, LaunchResult> by_token;        // idempotency: a token's first result
  int next_id = 1;

  Result<LaunchResult> Launch(const LaunchRequest& request) override {
    launches.push_back(request);
    if (on_launch) on_launch(request);
    if (next_launch_error) {
      Error e = *next_launch_error;
      next_launch_error.reset();
      return e;
    }
    if (auto seen = by_token.find(request.idempotency_token);
        !request.idempotency_token.empty() && seen != by_token.end())
      return seen->second;  // EC2 ClientToken semantics: no second launch
    LaunchResult r;
    int remaining = request.count;
    for (const Offering& o : request.offerings) {
      if (remaining == 0) break;
      if (no_capacity.count(o.Key()) != 0) {
        r.errors.push_back({o.Key(), Error::Capacity("InsufficientInstanceCapacity")});
        continue;
      }
      for (; remaining > 0; --remaining) {
        Instance inst;
        inst.instance_id = "i-fake" + std::to_string(next_id++);
        inst.pool = request.pool;
        inst.offering = o;
        inst.launch_time = clock_.WallNow();
        inst.state = InstanceState::kRunning;
        inst.tags = request.tags;
        inst.placement_group = request.placement_group;
        instances[inst.instance_id] = inst;
        r.instances.push_back(inst);
      }
    }
    if (!request.idempotency_token.empty()) by_token[request.idempotency_token] = r;
    return r;
  }
  Status Terminate(const std::vector<std::string>& ids) override {
    terminations.push_back(ids);
    if (next_terminate_error) {
      Error e = *next_terminate_error;
      next_terminate_error.reset();
      return e;
    }
    for (const std::string& id : ids) instances.erase(id);
    return Status::Ok();
  }
  // Warm capacity: a stopped instance is listed kStopped; a start brings it
  // back running at once (unknown ids: kConfig, as the providers say).
  Status Stop(const std::vector<std::string>& ids, WarmState) override {
    stops.push_back(ids);
    for (const std::string& id : ids) {
      auto it = instances.find(id);
      if (it == instances.end()) return Error::Config("unknown instance " + id);
      it->second.state = InstanceState::kStopped;
    }
    return Status::Ok();
  }
  Status Start(const std::vector<std::string>& ids) override {
    starts.push_back(ids);
    for (const std::string& id : ids) {
      auto it = instances.find(id);
      if (it == instances.end()) return Error::Config("unknown instance " + id);
      if (no_capacity.count(it->second.offering.Key()) != 0) return Error::Capacity("InsufficientInstanceCapacity");
    }
    for (const std::string& id : ids) {
      instances[id].state = InstanceState::kRunning;
      instances[id].tags.erase(kWarmTag);
    }
    return Status::Ok();
  }
  Status PutWarmPool(const std::string& group, int size, WarmState state) override {
    warm_pools.push_back({group, size, state});
    return Status::Ok();
  }
  Result<std::vector<Instance>> ListInstances() override {
    if (next_list_error) {
      Error e = *next_list_error;
      next_list_error.reset();
      return e;
    }
    std::vector<Instance> out;
    for (const auto& [id, inst] : instances) out.push_back(inst);
    return out;
  }
  Result<std::vector<InterruptionNotice>> PollInterruptions() override {
    std::vector<InterruptionNotice> out;
    out.swap(notices);
    return out;
  }
  Result<std::vector<Reservation>> ListReservations() override {
    if (!reservations) return CloudProvider::ListReservations();
    return *reservations;
  }
  Status AcknowledgeInterruptions(const std::vector<InterruptionNotice>& read) override {
    acknowledged.insert(acknowledged.end(), read.begin(), read.end());
    return Status::Ok();
  }
  // As the contract says: each offering's price in force at `since`, then
  // the changes after it.
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override {
    if (prices_error) return *prices_error;
    std::map<std::string, SpotPrice> in_force;
    std::vector<SpotPrice> out;
    for (const SpotPrice& p : prices) {
      if (p.time >= since) {
        out.push_back(p);
      } else {
        in_force[p.instance_type + "/" + p.zone + "/" + std::string(ToString(p.capacity_type))] = p;
      }
    }
    std::vector<SpotPrice> first;
    for (const auto& [key, p] : in_force) first.push_back(p);
    std::stable_sort(first.begin(), first.end(), [](const SpotPrice& a, const SpotPrice& b) { return a.time < b.time; });
    first.insert(first.end(), out.begin(), out.end());
    return first;
  }

 private:
  const Clock& clock_;
};

}  // namespace gpuscaler::testing
