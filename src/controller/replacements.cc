#include "gpuscaler/controller/replacements.h"

#include <utility>

namespace gpuscaler {

void ReplacementTracker::Start(const std::vector<PendingReplacement>& started, ClusterState& state) {
  for (const PendingReplacement& r : started) {
    state.HoldForReplacement(r.termination.instance_id, true);
    for (const std::string& id : r.replacement_ids) state.Protect(id, true);
    protecting_[r.termination.instance_id] = r.replacement_ids;
    waiting_.push_back(r);
  }
}

void ReplacementTracker::Release(const std::string& old_id, ClusterState& state) {
  auto it = protecting_.find(old_id);
  if (it == protecting_.end()) return;
  for (const std::string& id : it->second) state.Protect(id, false);
  protecting_.erase(it);
}

void ReplacementTracker::GiveUp(const std::string& old_id, ClusterState& state) {
  state.HoldForReplacement(old_id, false);
  Release(old_id, state);
}

ActuationResult ReplacementTracker::Progress(WallTime now, const Policy& policy, ClusterState& state,
                                             Actuator& actuator, TickReport* report) {
  for (auto it = protecting_.begin(); it != protecting_.end();) {
    const std::string old_id = (it++)->first;
    if (!state.Has(old_id)) Release(old_id, state);
  }
  ActuationResult done;
  std::vector<PendingReplacement> still_waiting;
  for (PendingReplacement& r : waiting_) {
    const std::string& old_id = r.termination.instance_id;
    if (!state.Has(old_id)) continue;  // gone meanwhile (interrupted, vanished)
    const NodePoolPolicy* pool = policy.FindPool(r.termination.pool);
    const Seconds timeout = pool != nullptr ? pool->registration_timeout : NodePoolPolicy{}.registration_timeout;
    bool ready = true;
    bool lost = false;
    for (const std::string& id : r.replacement_ids) {
      lost |= !state.Has(id);
      ready &= state.CanTakeWork(id);
    }
    if (lost || (!ready && now - r.since >= timeout)) {
      report->governor.notes.push_back(old_id + ": its replacement " +
                                       (lost ? std::string("is gone") : "did not become ready in time") +
                                       "; the node stays in service");
      GiveUp(old_id, state);
      continue;
    }
    if (!ready) {
      still_waiting.push_back(std::move(r));
      continue;
    }
    const size_t ended = done.ended.size() + done.draining.size();
    actuator.FinishReplacement(r, state.snapshot(), policy, &done, report);
    if (done.ended.size() + done.draining.size() == ended) GiveUp(old_id, state);
  }
  waiting_ = std::move(still_waiting);
  report->replacements_waiting = static_cast<int>(waiting_.size());
  return done;
}

}  // namespace gpuscaler
