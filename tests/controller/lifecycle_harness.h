// Shared scene for the node lifecycle tests: one pool of g5.xlarge nodes,
// the real planner, a cloud whose Auto Scaling groups list new instances
// only when the test says so.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/g5_fleet.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler::testing {

// Launches into an Auto Scaling group are accepted at once, but their
// instances stay out of the launch answer and out of ListInstances until
// Reveal(), as a group that has raised its desired capacity before EC2 has
// the instances.
class SlowGroupCloud final : public CloudProvider {
 public:
  explicit SlowGroupCloud(FakeCloudProvider& inner) : inner_(inner) {}
  Result<LaunchResult> Launch(const LaunchRequest& request) override {
    Result<LaunchResult> r = inner_.Launch(request);
    if (r && !request.auto_scaling_group.empty()) {
      for (const Instance& i : r->instances) hidden_.insert(i.instance_id);
      r->instances.clear();
    }
    return r;
  }
  Status Terminate(const std::vector<std::string>& ids) override { return inner_.Terminate(ids); }
  Status Stop(const std::vector<std::string>& ids, WarmState state) override { return inner_.Stop(ids, state); }
  Status Start(const std::vector<std::string>& ids) override { return inner_.Start(ids); }
  Status PutWarmPool(const std::string& group, int size, WarmState state) override {
    return inner_.PutWarmPool(group, size, state);
  }
  Result<std::vector<Instance>> ListInstances() override {
    Result<std::vector<Instance>> all = inner_.ListInstances();
    if (!all) return all;
    std::vector<Instance> out;
    for (Instance& i : *all) {
      if (hidden_.count(i.instance_id) == 0) out.push_back(std::move(i));
    }
    return out;
  }
  Result<std::vector<InterruptionNotice>> PollInterruptions() override { return inner_.PollInterruptions(); }
  Status AcknowledgeInterruptions(const std::vector<InterruptionNotice>& notices) override {
    return inner_.AcknowledgeInterruptions(notices);
  }
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override { return inner_.SpotPrices(since); }

  void Reveal() { hidden_.clear(); }
  // Lists one (the lowest id) of the accepted instances.
  void RevealOne() {
    if (!hidden_.empty()) hidden_.erase(hidden_.begin());
  }
  // Instances accepted but never coming.
  void Lose() {
    for (const std::string& id : hidden_) inner_.instances.erase(id);
    hidden_.clear();
  }

 private:
  FakeCloudProvider& inner_;
  std::set<std::string> hidden_;
};

inline Catalog LifecycleCatalog() { return G5XlargeCatalog(); }

inline Policy LifecyclePolicy(bool asg) {
  Policy p = UndampedGpuPolicy();
  NodePoolPolicy& pool = p.pools[0];
  pool.capacity_types = {CapacityType::kOnDemand};
  if (asg) {
    pool.actuation = Actuation::kAsg;
    pool.auto_scaling_group = "gpu-group";
  }
  p.disruption.consolidation = false;
  return p;
}

inline DemandUnit GpuUnit(std::string id) {
  DemandUnit u;
  u.id = std::move(id);
  u.workload_class = "batch";
  u.gpus = 1;
  u.cpu_milli = 1000;
  u.memory_mib = 4096;
  return u;
}

struct LifecycleScene {
  FakeClock clock;
  FakeCloudProvider fake{clock};
  SlowGroupCloud cloud{fake};
  FakeWorkSource work;
  Catalog catalog = LifecycleCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  std::unique_ptr<Controller> controller;

  explicit LifecycleScene(Policy policy, ControllerOptions options = {})
      : policy_(std::move(policy)), options_(std::move(options)) {
    Restart();
  }
  // A new controller on the same cloud, store and work: the daemon restarted.
  void Restart() {
    controller.reset();
    controller = std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, policy_, options_);
  }
  TickReport TickAfter(Seconds dt) {
    clock.Advance(dt);
    return controller->Tick();
  }
  // A running instance of pool "gpu" on `offering_key`, launched an hour or
  // more ago, running `running`.
  void AddRunningNode(const std::string& id, const std::string& offering_key, std::vector<DemandUnit> running) {
    Instance inst;
    inst.instance_id = id;
    inst.pool = "gpu";
    for (const Offering& o : catalog.Offerings({})) {
      if (o.Key() == offering_key) inst.offering = o;
    }
    inst.launch_time = clock.WallNow() - Seconds(3600);
    inst.state = InstanceState::kRunning;
    inst.tags = {{kOwnerTag, "gpu"}};
    fake.instances[id] = inst;
    work.SetRunning(id, std::move(running));
  }
  // The snapshot's node of the instance, or null.
  const Node* Find(const std::string& instance_id) const {
    for (const Node& n : controller->snapshot().nodes) {
      if (n.instance_id == instance_id) return &n;
    }
    return nullptr;
  }
  Policy policy_;
  ControllerOptions options_;

  int Count(NodeState s) const {
    int n = 0;
    for (const Node& node : controller->snapshot().nodes) n += node.state == s;
    return n;
  }
};

}  // namespace gpuscaler::testing
