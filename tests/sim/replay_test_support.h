// Shared by the replay tests (replay_*_test.cc): the invariants every
// replay's result keeps, checked with gtest assertions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim::testing {

// Cost = sum of the bills (and of the on-demand and spot shares), every bill
// at least the 60 s minimum, every job completed or unfinished, busy <= paid
// GPU-hours, no negative lost work and no controller errors.
inline void CheckInvariants(const Scenario& s, const RunResult& r) {
  SCOPED_TRACE(r.name);
  double sum = 0;
  for (const InstanceBill& b : r.bills) {
    sum += b.usd;
    EXPECT_GE(b.billed_seconds, 60);
  }
  EXPECT_NEAR(r.total_cost_usd, sum, 1e-6);
  EXPECT_NEAR(r.cost_by_capacity_type.at("on-demand") + r.cost_by_capacity_type.at("spot"), r.total_cost_usd, 1e-6);
  EXPECT_EQ(r.jobs_completed + r.jobs_unfinished, static_cast<int64_t>(s.trace.jobs.size()));
  EXPECT_LE(r.busy_gpu_hours, r.paid_gpu_hours + 1e-6);
  EXPECT_GE(r.gpu_hours_lost, 0);
  EXPECT_EQ(r.controller_errors, 0);
}

}  // namespace gpuscaler::sim::testing
