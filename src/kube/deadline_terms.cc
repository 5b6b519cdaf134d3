#include "gpuscaler/kube/deadline_terms.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>

namespace gpuscaler::kube {
namespace {

// The annotation's value; nullptr when the pod does not carry it.
const std::string* Annotation(const PodInfo& pod, const char* key) {
  auto it = pod.annotations.find(key);
  return it == pod.annotations.end() ? nullptr : &it->second;
}

Error BadAnnotation(const PodInfo& pod, const char* key, const std::string& what) {
  return Error::InvalidInput("pod " + pod.namespace_name + "/" + pod.name + ": annotation " + key + ": " +
                             what);
}

Error BadValue(const PodInfo& pod, const char* key, const std::string& expected, const std::string& value) {
  return BadAnnotation(pod, key, "expected " + expected + ", got '" + value + "'");
}

Result<std::optional<Seconds>> StatedRuntime(const PodInfo& pod) {
  const std::string* text = Annotation(pod, kAnnotationExpectedRuntime);
  if (text == nullptr) return std::optional<Seconds>();
  Seconds runtime{0};
  if (!ParseDuration(*text, &runtime) || runtime.count() <= 0)
    return BadValue(pod, kAnnotationExpectedRuntime, "a duration longer than 0s such as \"10h\"", *text);
  return std::optional<Seconds>(runtime);
}

Result<std::optional<double>> StatedProgress(const PodInfo& pod) {
  const std::string* text = Annotation(pod, kAnnotationProgress);
  if (text == nullptr) return std::optional<double>();
  // from_chars, not strtod: the daemon's locale must not change what "0.5" means.
  double progress = -1;
  const char* end = text->data() + text->size();
  const auto [stop, ec] = std::from_chars(text->data(), end, progress);
  if (text->empty() || ec != std::errc() || stop != end || !(progress >= 0 && progress <= 1))
    return BadValue(pod, kAnnotationProgress, "a number between 0 and 1", *text);
  return std::optional<double>(progress);
}

Result<std::optional<WallTime>> StatedCheckpoint(const PodInfo& pod) {
  const std::string* text = Annotation(pod, kAnnotationCheckpointTime);
  if (text == nullptr) return std::optional<WallTime>();
  WallTime at{};
  if (!ParseRfc3339(*text, &at))
    return BadValue(pod, kAnnotationCheckpointTime, "an RFC 3339 time such as \"2026-12-14T09:00:00Z\"",
                    *text);
  if (Annotation(pod, kAnnotationProgress) == nullptr)
    return BadAnnotation(
        pod, kAnnotationCheckpointTime,
        std::string("only with ") + kAnnotationProgress + ", the fraction of the work done at it");
  return std::optional<WallTime>(at);
}

// The deadline the annotation states for a job of `whole_runtime`.
Result<std::optional<WallTime>> StatedDeadline(const PodInfo& pod, Seconds whole_runtime) {
  const std::string* text = Annotation(pod, kAnnotationDeadline);
  if (text == nullptr) return std::optional<WallTime>();
  if (WallTime at{}; ParseRfc3339(*text, &at)) {
    // Not after the creation, the Uniform Progress line would have no length.
    if (at <= pod.created)
      return BadValue(pod, kAnnotationDeadline,
                      "a time after the pod's creation (" + FormatRfc3339(pod.created) + ")", *text);
    return std::optional<WallTime>(at);
  }
  std::string error;
  std::optional<DeadlineRule> rule = ParseDeadlineRule(*text, &error);
  const bool multiple = !text->empty() && (text->back() == 'x' || text->back() == 'X');
  if (!rule && multiple) return BadAnnotation(pod, kAnnotationDeadline, error);
  if (!rule)
    return BadValue(
        pod, kAnnotationDeadline,
        "a duration longer than 0s such as \"36h\", a multiple of the runtime such as \"1.5x\" or an RFC "
        "3339 time such as \"2026-12-14T09:00:00Z\"",
        *text);
  return std::optional<WallTime>(pod.created + rule->Allowed(whole_runtime));
}

// Keeps the value of `stated` in `*out` when there is one, else its error in
// `*first` unless an earlier one is there already.
template <typename T>
void Take(Result<std::optional<T>> stated, std::optional<T>* out, Status* first) {
  if (!stated) {
    if (first->ok()) *first = stated.error();
  } else if (*stated) {
    *out = **stated;
  }
}

}  // namespace

Status ApplyWorkTerms(const PodInfo& pod, const WorkloadClassPolicy* cls, PodRun run, DemandUnit* u) {
  Status first;
  std::optional<Seconds> stated;
  Take(StatedRuntime(pod), &stated, &first);
  const std::optional<Seconds> whole = stated ? stated : cls != nullptr ? cls->expected_runtime : u->expected_runtime;
  std::optional<double> progress;
  Take(StatedProgress(pod), &progress, &first);
  std::optional<WallTime> checkpoint;
  Take(StatedCheckpoint(pod), &checkpoint, &first);

  u->expected_runtime =
      Seconds(std::llround((1.0 - progress.value_or(0)) * static_cast<double>(whole->count())));
  if (run == PodRun::kRunning) {
    // A checkpoint older than the pod's start was written by an earlier run:
    // this one resumed from it when it started.
    std::optional<WallTime> since = pod.started;
    if (checkpoint) since = since ? std::max(*since, *checkpoint) : *checkpoint;
    if (since) u->progressing_since = since;
  }

  std::optional<WallTime> deadline;
  Take(StatedDeadline(pod, *whole), &deadline, &first);
  if (!deadline && cls != nullptr && cls->deadline) deadline = pod.created + cls->deadline->Allowed(*whole);
  if (deadline) {
    u->deadline = deadline;
    u->submitted = pod.created;
    // The line needs the work's own runtime: a class's guess gives none.
    u->total_work = stated ? *stated : Seconds(0);
  }
  return first;
}

}  // namespace gpuscaler::kube
