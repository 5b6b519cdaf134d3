#include "gpuscaler/controller/failpoint.h"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <mutex>

namespace gpuscaler::failpoint {
namespace {

struct Armed {
  std::mutex mu;
  std::string name;
  int nth = 1;
  int hits = 0;
};

Armed& State() {
  static Armed* state = new Armed;  // never destroyed: a point may be hit during exit
  return *state;
}

}  // namespace

const std::vector<std::string>& Names() {
  static const std::vector<std::string> names = {
      "launch.before_call",    "launch.after_call",    "launch.after_outcome",
      "terminate.before_call", "terminate.after_call", "terminate.after_outcome",
      "tick.before_commit",    "tick.after_commit",    "recover.launch.after_call",
      "recover.terminate.after_call"};
  return names;
}

namespace internal {
void Hit(std::string_view name) {
  Armed& a = State();
  std::lock_guard lock(a.mu);
  if (name != a.name) return;
  if (++a.hits < a.nth) return;
  std::raise(SIGKILL);
}
}  // namespace internal

Status Arm(std::string_view spec) {
  std::string_view name = spec;
  int nth = 1;
  if (const size_t colon = spec.find(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    const std::string_view count = spec.substr(colon + 1);
    auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), nth);
    if (ec != std::errc() || end != count.data() + count.size() || nth < 1)
      return Error::Config(std::string(kEnvironmentVariable) + ": '" + std::string(spec) +
                           "': the count after ':' must be a whole number >= 1");
  }
  const auto& names = Names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    return Error::Config(std::string(kEnvironmentVariable) + ": unknown failpoint '" + std::string(name) +
                         "' (known: " + known + ")");
  }
  Armed& a = State();
  std::lock_guard lock(a.mu);
  a.name = std::string(name);
  a.nth = nth;
  a.hits = 0;
  internal::armed.store(true, std::memory_order_relaxed);
  return Status::Ok();
}

Status ArmFromEnvironment() {
  const char* spec = std::getenv(kEnvironmentVariable);
  if (spec == nullptr || *spec == '\0') return Status::Ok();
  return Arm(spec);
}

void Disarm() { internal::armed.store(false, std::memory_order_relaxed); }

}  // namespace gpuscaler::failpoint
