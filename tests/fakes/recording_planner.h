// A planner for controller tests: it records every snapshot it is given and
// returns the plan the test put in `*next` (once; then empty plans until the
// test scripts another).
#pragma once

#include <vector>

#include "gpuscaler/controller/controller.h"

namespace gpuscaler::testing {

inline PlannerFn RecordingPlanner(std::vector<Snapshot>* seen, Plan* next) {
  return [seen, next](const Snapshot& s, const Policy&) {
    seen->push_back(s);
    Plan p = *next;
    *next = {};
    return p;
  };
}

}  // namespace gpuscaler::testing
