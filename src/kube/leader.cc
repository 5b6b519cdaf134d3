#include "gpuscaler/kube/leader.h"

#include <nlohmann/json.hpp>

#include <random>

#include "json_objects.h"

namespace gpuscaler::kube {
namespace {
using nlohmann::json;

int64_t WholeSeconds(std::chrono::milliseconds d) {
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d + std::chrono::milliseconds(999)).count());
}
}  // namespace

std::string FormatMicroTime(WallTime t) {
  std::string s = FormatRfc3339(t);  // "…:05Z"
  if (!s.empty() && s.back() == 'Z') s.insert(s.size() - 1, ".000000");
  return s;
}

Status ValidateLeaderElection(const LeaderElectionOptions& o) {
  if (o.namespace_name.empty() || o.lease_name.empty()) return Error::Config("leader election: namespace and lease name are required");
  if (o.identity.empty()) return Error::Config("leader election: identity is required");
  if (o.retry_period.count() <= 0) return Error::Config("leader election: retry period must be positive");
  if (!(o.renew_deadline.count() * 10 > o.retry_period.count() * 12))
    return Error::Config("leader election: renew deadline must exceed 1.2 x the retry period");
  if (!(o.lease_duration > o.renew_deadline))
    return Error::Config("leader election: lease duration must exceed the renew deadline");
  return Status::Ok();
}

LeaderElector::LeaderElector(ApiClient& client, const Clock& clock, LeaderElectionOptions options,
                             std::function<void(bool)> on_change)
    : client_(client), clock_(clock), options_(std::move(options)), on_change_(std::move(on_change)) {}

LeaderElector::~LeaderElector() { Stop(false); }

std::string LeaderElector::LeasePath() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_name + "/leases";
}

std::string LeaderElector::LeaseBody(const Record& r, const std::string& rv) const {
  json j = {{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", {{"name", options_.lease_name}, {"namespace", options_.namespace_name}}},
            {"spec",
             {{"holderIdentity", r.holder},
              {"leaseDurationSeconds", r.lease_duration_s},
              {"acquireTime", r.acquire_time},
              {"renewTime", r.renew_time},
              {"leaseTransitions", r.transitions}}}};
  if (!rv.empty()) j["metadata"]["resourceVersion"] = rv;
  return j.dump();
}

void LeaderElector::SetError(std::string e) {
  std::lock_guard<std::mutex> lock(mu_);
  last_error_ = std::move(e);
}

std::string LeaderElector::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

int64_t LeaderElector::transitions_seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return transitions_;
}

std::chrono::milliseconds LeaderElector::LeaderlessFor() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!observed_) return std::chrono::milliseconds(0);
  const SteadyTime now = clock_.Now();
  if (holder_ && renewed_at_ && now - *renewed_at_ < options_.renew_deadline) return std::chrono::milliseconds(0);
  SteadyTime since = observed_at_;
  if (!observed_->holder.empty()) since += std::chrono::seconds(std::max<int64_t>(observed_->lease_duration_s, 1));
  if (now <= since) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
}

bool LeaderElector::IsLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holder_ && renewed_at_ && clock_.Now() - *renewed_at_ < options_.renew_deadline;
}

// A successful CREATE or UPDATE makes us the holder as of `started` (the
// time the try began: a slow answer must not extend the lease we assume).
bool LeaderElector::Write(const std::string& method, const std::string& path, const Record& r, const std::string& rv) {
  const SteadyTime started = clock_.Now();
  Result<ApiResponse> res = client_.Call(method, path, LeaseBody(r, rv));
  if (!res) {
    SetError(res.error().message());
    return false;
  }
  if (!res->ok()) {
    // 409: another replica wrote first (or the Lease was created meanwhile).
    SetError(ApiError(*res, method + " lease").message());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  observed_ = r;
  observed_at_ = started;
  renewed_at_ = started;
  holder_ = true;
  transitions_ = r.transitions;
  last_error_.clear();
  return true;
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now_text = FormatMicroTime(clock_.WallNow());
  const std::string path = LeasePath() + "/" + options_.lease_name;
  Result<ApiResponse> got = client_.Get(path);
  if (!got) {
    SetError(got.error().message());
    return IsLeader();
  }
  Record mine{options_.identity, WholeSeconds(options_.lease_duration), now_text, now_text, 0};
  if (got->status == 404) {
    return Write("POST", LeasePath(), mine, "");
  }
  if (!got->ok()) {
    SetError(ApiError(*got, "get lease").message());
    return IsLeader();
  }
  Record current;
  std::string rv;
  try {
    const json j = json::parse(got->body);
    const json& spec = ObjectAt(j, "spec");
    rv = ResourceVersionOf(j);
    current.holder = StringAt(spec, "holderIdentity");
    current.lease_duration_s = IntAt(spec, "leaseDurationSeconds", 0);
    current.acquire_time = StringAt(spec, "acquireTime");
    current.renew_time = StringAt(spec, "renewTime");
    current.transitions = IntAt(spec, "leaseTransitions", 0);
  } catch (const json::exception& e) {
    SetError(std::string("lease: ") + e.what());
    return IsLeader();
  }
  {
    // A record is seen when the answer arrives, not when the try began: a
    // process stopped in between (SIGSTOP, a long GC-like pause) would
    // otherwise date a holder's fresh renewal from before its stop, and take
    // over a live Lease one retry later.
    const SteadyTime now = clock_.Now();
    std::lock_guard<std::mutex> lock(mu_);
    if (!observed_ || !(*observed_ == current)) {
      observed_ = current;
      observed_at_ = now;
    }
    transitions_ = current.transitions;
    if (!current.holder.empty() && current.holder != options_.identity) {
      holder_ = false;
      const auto held_for = std::chrono::seconds(std::max<int64_t>(current.lease_duration_s, 1));
      if (now < observed_at_ + held_for) return false;  // someone else's, still valid
    }
  }
  if (current.holder == options_.identity) {
    mine.acquire_time = current.acquire_time;
    mine.transitions = current.transitions;
  } else {
    // Every new holder counts one, a released Lease's too (as client-go
    // does): leaseTransitions then numbers the leadership terms, so a
    // higher number always means a later leader.
    mine.transitions = current.transitions + 1;
  }
  if (Write("PUT", path, mine, rv)) return true;
  return IsLeader();
}

void LeaderElector::Release() {
  if (!IsLeader()) return;
  const std::string path = LeasePath() + "/" + options_.lease_name;
  Result<ApiResponse> got = client_.Get(path);
  if (!got || !got->ok()) return;
  try {
    const json j = json::parse(got->body);
    const json& spec = ObjectAt(j, "spec");
    if (StringAt(spec, "holderIdentity") != options_.identity) return;
    Record r;
    r.holder = "";
    r.lease_duration_s = 1;
    r.acquire_time = StringAt(spec, "acquireTime");
    r.renew_time = FormatMicroTime(clock_.WallNow());
    r.transitions = IntAt(spec, "leaseTransitions", 0);
    (void)client_.Call("PUT", path, LeaseBody(r, ResourceVersionOf(j)));
  } catch (const json::exception&) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  holder_ = false;
}

void LeaderElector::Start() {
  std::lock_guard<std::mutex> lock(run_mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop(bool release) {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (release) Release();
  std::lock_guard<std::mutex> lock(mu_);
  holder_ = false;
}

void LeaderElector::Run() {
  // Jitter from the identity: replicas differ, runs are reproducible.
  std::mt19937_64 rng(std::hash<std::string>()(options_.identity));
  std::uniform_real_distribution<double> jitter(0.0, 0.2);
  bool reported = false;
  std::unique_lock<std::mutex> lock(run_mu_);
  while (!stop_) {
    lock.unlock();
    TryAcquireOrRenew();
    const bool leader = IsLeader();
    if (leader != reported) {
      reported = leader;
      if (on_change_) on_change_(leader);
    }
    lock.lock();
    auto wait = options_.retry_period;
    if (!leader) {
      wait += std::chrono::duration_cast<std::chrono::milliseconds>(options_.retry_period * jitter(rng));
    }
    wake_.wait_for(lock, wait, [this] { return stop_; });
  }
  lock.unlock();
  if (reported && on_change_) on_change_(false);
}

}  // namespace gpuscaler::kube
