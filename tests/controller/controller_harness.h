// The controller tests' shared scene (controller_*_test.cc): a one-type
// catalog (and one with a second g5 size), the undamped GPU policy, a lookup
// of a snapshot's offering by key, and ControllerHarness, a controller with
// a scripted planner.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/recording_planner.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "lifecycle_harness.h"

namespace gpuscaler::testing {

inline Catalog TinyCatalog() { return testing::LifecycleCatalog(); }

inline Policy TestPolicy() { return testing::UndampedGpuPolicy(); }

inline Offering Find(const Snapshot& s, const std::string& key) {
  for (const Offering& o : s.offerings) {
    if (o.Key() == key) return o;
  }
  ADD_FAILURE() << "no offering " << key;
  return {};
}

// TinyCatalog plus a dearer second g5 size: one failure domain (g5 in a
// zone) then holds two spot offerings.
inline Catalog TwoG5SizesCatalog() {
  Catalog c = TinyCatalog();
  InstanceType big = c.instance_types.front();
  big.name = "g5.2xlarge";
  big.vcpus = 8;
  big.memory_mib = 32768;
  c.instance_types.push_back(big);
  for (RegionPrices& r : c.regions) {
    r.on_demand_usd_per_hour[big.name] = 1.2;
    r.spot_usd_per_hour[big.name] = 0.5;
  }
  return c;
}

// A controller on fakes (clock, cloud, work source) and an in-memory audit
// store, whose planner returns `next_plan` once and records every snapshot it
// is given in `seen`; Launch() and Terminate() build the actions of a plan.
struct ControllerHarness {
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  Catalog catalog = TinyCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  Plan next_plan;  // what the scripted planner returns (then cleared)
  std::vector<Snapshot> seen;
  std::unique_ptr<Controller> controller;

  explicit ControllerHarness(Policy policy = TestPolicy(), Catalog c = TinyCatalog()) : catalog(std::move(c)) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    controller = std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, std::move(policy), o,
                                              testing::RecordingPlanner(&seen, &next_plan));
  }
  LaunchAction Launch(const std::string& key, int count, std::vector<std::string> fallbacks = {}) {
    LaunchAction l;
    l.pool = "gpu";
    l.offering = Find(controller->snapshot(), key);
    l.count = count;
    for (const std::string& f : fallbacks) l.fallbacks.push_back(Find(controller->snapshot(), f));
    l.reason = "test";
    return l;
  }
  TerminationAction Terminate(const std::string& instance_id) {
    TerminationAction t;
    t.node_id = t.instance_id = instance_id;
    t.pool = "gpu";
    t.reason = "test";
    return t;
  }
};

}  // namespace gpuscaler::testing
