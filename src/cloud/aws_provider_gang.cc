// AwsProvider: a gang's launch into an Auto Scaling group. A group has no
// all-or-nothing call, so the provider raises it, waits for the gang, and
// gives back a gang that does not come up whole within gang_timeout.
#include <algorithm>
#include <charconv>

#include "aws_provider_impl.h"
#include "gpuscaler/cloud/aws_provider.h"

namespace gpuscaler::cloud {
namespace {

bool Retryable(const Error& e) {
  return e.category() == ErrorCategory::kTransient || e.category() == ErrorCategory::kThrottled;
}

Error AlsoFailed(const Error& why, const Error& step) {
  return why.WithContext("giving the gang back also failed (" + step.message() + ")");
}

}  // namespace

LaunchResult AwsProvider::AwaitGang(const LaunchRequest& request, const AutoScalingGroup& g, WallTime since) {
  const SteadyTime deadline = clock_.Now() + options_.gang_timeout;
  const std::chrono::milliseconds interval =
      std::max(options_.gang_poll_interval, std::chrono::milliseconds(1));
  // Also bounded by count: a clock that does not move while the provider
  // sleeps (a test's) still ends the wait.
  const int64_t max_looks = std::chrono::milliseconds(options_.gang_timeout) / interval + 1;
  std::vector<Ec2Instance> up;
  std::optional<ScalingActivity> failed;
  std::optional<Error> look_error;
  for (int64_t look = 1;; ++look) {
    look_error.reset();
    Result<std::vector<Ec2Instance>> made = GroupLaunchInstances(g.name, request.idempotency_token);
    if (made.ok()) {
      up = std::move(*made);
      if (static_cast<int>(up.size()) >= request.count) break;
      Result<std::vector<ScalingActivity>> activities = FailedActivities(g.name, since);
      if (activities.ok() && !activities->empty()) {
        failed = activities->front();  // the newest
        break;
      }
      if (!activities.ok()) look_error = activities.error();
    } else {
      look_error = made.error();
    }
    if ((look_error && !Retryable(*look_error)) || clock_.Now() >= deadline || look >= max_looks) break;
    client_.Sleep(interval);
  }
  if (static_cast<int>(up.size()) < request.count) {
    return GiveBackGang(request, g, static_cast<int>(up.size()), failed, look_error);
  }
  LaunchResult result;
  for (const Ec2Instance& e : up) {
    if (static_cast<int>(result.instances.size()) == request.count) break;
    result.instances.push_back(GroupInstance(e, request, client_.options().region));
    launched_[e.instance_id] = result.instances.back().offering;
  }
  return result;
}

LaunchResult AwsProvider::GiveBackGang(const LaunchRequest& request, const AutoScalingGroup& g, int came_up,
                                       const std::optional<ScalingActivity>& failed,
                                       const std::optional<Error>& look_error) {
  std::string message = "auto scaling group '" + g.name + "': a gang needs all " +
                        std::to_string(request.count) + " nodes; " + std::to_string(came_up) +
                        " came up within " + std::to_string(options_.gang_timeout.count()) +
                        " s, and every one of them is given back";
  if (failed)
    message += ": " + (failed->status_message.empty() ? failed->description : failed->status_message);
  if (look_error) message += " (the last look for them failed: " + look_error->message() + ")";
  const Error why(failed ? ActivityCategory(*failed) : ErrorCategory::kCapacity, std::move(message));
  const std::string key = OfferingKeyFor(request, g, failed ? failed->status_message : "");
  LaunchResult result;
  auto fail = [&](const Error& step) {
    result.errors.push_back({key, AlsoFailed(why, step)});
    return result;
  };

  // A fresh look: the floor is the desired capacity now less the nodes that
  // never came up, so the group stops launching them without taking any
  // instance out itself.
  Result<std::vector<AutoScalingGroup>> found = DescribeGroups({g.name});
  if (!found.ok()) return fail(found.error());
  if (found->empty()) return fail(Error::NotFound("auto scaling group '" + g.name + "' not found"));
  const AutoScalingGroup& now = found->front();
  Result<std::vector<Ec2Instance>> live = GroupLaunchInstances(g.name, request.idempotency_token);
  if (!live.ok()) return fail(live.error());
  const int missing = std::max(0, request.count - static_cast<int>(live->size()));
  const int floor = std::max(now.min_size, now.desired_capacity - missing);
  // Tagged before anything changes: a replay (after a crash, or of this
  // call) finishes the give-back instead of raising the group again.
  Status tagged = SendEmpty(
      client_, CreateOrUpdateTagsQuery(g.name, {{kIntentGangTag, kGangGivingBack, false},
                                                {kIntentDesiredTag, std::to_string(floor), false}}));
  if (!tagged.ok()) return fail(tagged.error());
  given_back_.insert_or_assign(request.idempotency_token, OfferingError{key, why});
  if (Status finished = FinishGiveBack(request, now, floor); !finished.ok()) return fail(finished.error());
  result.errors.push_back({key, why});
  return result;
}

Status AwsProvider::FinishGiveBack(const LaunchRequest& request, const AutoScalingGroup& g, int floor) {
  // Lowered first, to what the group holds: it launches no more of the
  // gang, and takes out nothing by itself.
  if (g.desired_capacity > floor) {
    if (Status set = SendEmpty(client_, SetDesiredCapacityQuery(g.name, floor, std::nullopt)); !set.ok())
      return set;
  }
  Result<std::vector<Ec2Instance>> live = GroupLaunchInstances(g.name, request.idempotency_token);
  if (!live.ok()) return live.error();
  std::vector<std::string> ids;
  for (const Ec2Instance& e : *live) ids.push_back(e.instance_id);
  // Through the group, decrementing its desired capacity: back where it was
  // before the raise.
  if (Status terminated = Terminate(ids); !terminated.ok()) return terminated;
  return SendEmpty(client_, CreateOrUpdateTagsQuery(g.name, {{kIntentGangTag, kGangGivenBack, false}}));
}

LaunchResult AwsProvider::GivenBackGang(const LaunchRequest& request, const AutoScalingGroup& g) {
  const std::string& token = request.idempotency_token;
  auto known = given_back_.find(token);
  OfferingError error =
      known != given_back_.end()
          ? known->second
          : OfferingError{
                OfferingKeyFor(request, g, ""),
                Error::Capacity("auto scaling group '" + g.name + "': a gang needs all " +
                                std::to_string(request.count) +
                                " nodes; they did not all come up, and every one of them is given back")};
  given_back_.try_emplace(token, error);
  if (TagOf(g.tags, kIntentTag) == token && TagOf(g.tags, kIntentGangTag) == kGangGivingBack) {
    // Cut short by a failed step or a crash: finish it, never raise.
    const std::string tagged = TagOf(g.tags, kIntentDesiredTag);
    int floor = 0;
    if (std::from_chars(tagged.data(), tagged.data() + tagged.size(), floor).ec != std::errc()) {
      floor = g.desired_capacity;  // unreadable: lower nothing
    }
    if (Status finished = FinishGiveBack(request, g, floor); !finished.ok()) {
      error.error = AlsoFailed(error.error, finished.error());
    }
  }
  LaunchResult result;
  result.errors.push_back(std::move(error));
  return result;
}

}  // namespace gpuscaler::cloud
