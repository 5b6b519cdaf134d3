// The scaling governor: HPA-style damping between the planner and the
// actuator, per node pool.
//
// Every tick the plan's launches and terminations give a recommendation per
// pool (nodes now + launches − terminations; for scale-down also minus the
// empty nodes the plan did not need but left for later ticks,
// Plan::empty_nodes_left_by_pool). Then
//  - scale-down stabilization: removals are limited so the pool stays at the
//    highest recommendation seen over `scale_down_stabilization`;
//  - scale-up stabilization: launches are limited to the lowest
//    recommendation over `scale_up_stabilization` (0: no delay);
//  - cooldowns: no scale-up within `scale_up_cooldown` of the pool's last
//    scale-up; no scale-down within `scale_down_cooldown` of its last scale-up
//    or scale-down;
//  - max step: at most `max_nodes_added_per_tick` / `max_nodes_removed_per_tick`
//    in total per tick.
// Actions held back are dropped from the plan with a reason line; launches are
// cut from the end of the plan, terminations likewise (the planner orders them
// by preference). Removals whose work moves onto new nodes of the same plan
// (a replacement) are held when their new node is; a replacement of several
// nodes is kept or held whole, new node included (half of one costs more than
// none). Deterministic; not thread-safe.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/node.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

struct GovernorResult {
  int launches_held = 0;           // nodes not launched
  int terminations_held = 0;       // nodes not terminated
  std::vector<std::string> notes;  // why, one line each
};

class ScalingGovernor {
 public:
  // Edits `plan` in place; `nodes_per_pool` are the pool sizes before the plan.
  GovernorResult Apply(const ScalingPolicy& scaling, const std::map<std::string, int>& nodes_per_pool,
                       WallTime now, Plan* plan);
  // Tells the governor what was actually done (for the cooldowns).
  void RecordScaleUp(const std::string& pool, WallTime now) { last_up_[pool] = now; }
  void RecordScaleDown(const std::string& pool, WallTime now) { last_down_[pool] = now; }
  // True when some pool still has a recommendation that will expire from a
  // window (a held-back action may be allowed later without new inputs).
  bool HasPendingHold() const { return pending_hold_; }

 private:
  struct Sample {
    WallTime time;
    int desired;       // nodes now + launches - terminations
    int desired_down;  // and minus the empty nodes the plan left for later ticks
  };
  std::map<std::string, std::deque<Sample>> history_;
  std::map<std::string, WallTime> last_up_;
  std::map<std::string, WallTime> last_down_;
  bool pending_hold_ = false;
};

// Fail static, whatever the planner proposed: drops every termination of a
// node that runs, or whose pool serves, a class whose signals are stale or
// missing (snapshot.scale_down_blocked_classes), with a note and a count in
// `held`. A class that names no pools blocks every pool. A replacement of
// several nodes with one such termination is held whole, its new node
// included.
void HoldBlockedTerminations(const Snapshot& snapshot, const Policy& policy, Plan* plan,
                             GovernorResult* held);

}  // namespace gpuscaler
