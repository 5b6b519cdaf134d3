// Actuator::Recover: finishing the intents a restart found open. Contract in actuator.h.
#include <map>
#include <set>

#include "actuator_internal.h"
#include "gpuscaler/controller/actuator.h"
#include "gpuscaler/controller/failpoint.h"

namespace gpuscaler {

using actuator_internal::JoinErrors;
using actuator_internal::OutcomeOf;

void Actuator::Recover(const Policy& policy, ActuationResult* result, TickReport* report) {
  if (recovered_) return;
  if (store_ == nullptr || options_.dry_run) {
    recovered_ = true;
    return;
  }
  Result<std::vector<ActionRow>> open = store_->OpenIntents();
  if (!open) {
    report->errors.push_back(open.error().WithContext("reading open intents"));
    return;
  }
  recovered_ = true;
  const WallTime now = clock_.WallNow();
  // A launch's fallback runs (other capacity type) have their own ClientToken
  // and are not part of the replay below, which sends the chosen offering
  // only: their instances are found by the intent tag instead, so the action
  // row lists every instance the launch made.
  std::map<std::string, std::vector<Instance>> tagged;
  if (std::any_of(open->begin(), open->end(),
                  [](const ActionRow& r) { return r.action.kind == ActionKind::kLaunch; })) {
    Result<std::vector<Instance>> listed = cloud_.ListInstances();
    if (listed) {
      for (Instance& inst : *listed) {
        auto tag = inst.tags.find(kIntentTag);
        if (tag != inst.tags.end()) tagged[tag->second].push_back(std::move(inst));
      }
    } else {
      report->errors.push_back(listed.error().WithContext("listing instances for open intents"));
    }
  }
  for (const ActionRow& row : *open) {
    const ActionRecord& a = row.action;
    if (RecoverWake(row, result, report)) continue;
    if (a.kind == ActionKind::kTerminate) {
      if (nodes_ != nullptr && a.instance_ids.size() == 1) {
        // The drain it started before the restart resumes with the deadline
        // it had; a node that is gone is terminated below.
        const DrainRequest drain{a.instance_ids[0], row.id, a.reason, "terminated", policy.disruption.drain_timeout,
                                 policy.disruption.do_not_disrupt_labels};
        if (StartDrain(drain, "", result, report)) continue;
      }
      Status s = cloud_.Terminate(a.instance_ids);
      failpoint::Check("recover.terminate.after_call");
      report->Record(store_->RecordActionOutcome(row.id,
                                                 s.ok() ? ActionOutcome::kSucceeded : ActionOutcome::kFailed,
                                                 s.ok() ? "completed after a restart" : s.error().ToString(),
                                                 s.ok() ? a.instance_ids : std::vector<std::string>{}));
      if (s.ok()) {
        result->terminated_elsewhere.insert(result->terminated_elsewhere.end(), a.instance_ids.begin(),
                                            a.instance_ids.end());
      }
      continue;
    }
    if (!row.decision_time || now - *row.decision_time > options_.intent_replay_window) {
      // Too old to send again (the cloud forgets tokens), but what it made
      // carries its intent tag: the row still lists the launch's instances.
      const std::vector<std::string> ids =
          RecordLaunched(tagged[a.idempotency_token], a.decision_id, a.reason,
                         /*listed_state=*/true, result, report);
      report->Record(store_->RecordActionOutcome(
          row.id, OutcomeOf(ids.size(), a.count),
          ids.empty() ? "abandoned after a restart: older than the replay window, "
                        "and no instance carries its intent tag"
                      : "closed after a restart (older than the replay window): "
                        "instances found by their intent tag",
          ids));
      continue;
    }
    LaunchRequest request = RequestFor(a.pool, a.count, a.idempotency_token, policy);
    request.offerings = {a.offering};
    Result<LaunchResult> replayed = cloud_.Launch(request);
    failpoint::Check("recover.launch.after_call");
    if (!replayed) {
      // Not recorded as failed: the next start tries again within the window.
      report->errors.push_back(
          replayed.error().WithContext("replaying launch intent " + a.idempotency_token));
      continue;
    }
    std::set<std::string> seen;
    for (const Instance& inst : replayed->instances) seen.insert(inst.instance_id);
    for (const Instance& inst : tagged[a.idempotency_token]) {
      if (seen.insert(inst.instance_id).second) replayed->instances.push_back(inst);
    }
    const std::vector<std::string> ids =
        RecordLaunched(replayed->instances, a.decision_id, a.reason, false, result, report);
    report->nodes_launched += static_cast<int>(ids.size());
    report->Record(store_->RecordActionOutcome(row.id, OutcomeOf(ids.size(), a.count),
                                               "completed after a restart " + JoinErrors(replayed->errors),
                                               ids));
    result->failed = true;
  }
}

}  // namespace gpuscaler
