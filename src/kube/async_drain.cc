#include "gpuscaler/kube/async_drain.h"

#include <algorithm>
#include <chrono>

namespace gpuscaler::kube {
namespace {

Seconds AtLeastOneSecond(std::chrono::milliseconds d) {
  return std::max(Seconds(1), std::chrono::duration_cast<Seconds>(d));
}

}  // namespace

AsyncDrainer::AsyncDrainer(ApiClient& client, const Clock& clock, std::function<bool()> may_act, std::string component)
    // The steps never wait: Step schedules the next round instead.
    : drainer_(client, clock, [](std::chrono::milliseconds) { return false; }, std::move(component)),
      clock_(clock),
      may_act_(std::move(may_act)) {}

AsyncDrainer::~AsyncDrainer() { Stop(); }

void AsyncDrainer::Begin(const std::string& key, const std::string& node_name, DrainOptions options) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (jobs_.count(key) != 0) return;
    Job job;
    job.node_name = node_name;
    job.opened = clock_.WallNow();
    job.deadline = job.opened + std::chrono::duration_cast<Seconds>(options.timeout);
    job.next = job.opened;
    job.options = std::move(options);
    jobs_.emplace(key, std::move(job));
    begun_ = true;
  }
  wake_.notify_all();
}

bool AsyncDrainer::IsOpen(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.count(key) != 0;
}

size_t AsyncDrainer::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

std::vector<AsyncDrainer::Outcome> AsyncDrainer::TakeEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Outcome> out;
  out.swap(ended_);
  return out;
}

std::optional<WallTime> AsyncDrainer::Step() {
  const WallTime now = clock_.WallNow();
  std::vector<std::pair<std::string, Job>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, job] : jobs_) {
      if (job.next <= now) due.emplace_back(key, job);
    }
  }
  const bool acting = !may_act_ || may_act_();
  for (auto& [key, job] : due) {
    std::optional<Outcome> outcome;
    if (acting) {
      outcome = Advance(key, job, now);
    } else {
      job.next = now + AtLeastOneSecond(job.options.retry_interval);  // paused, not ended
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (outcome) {
      jobs_.erase(key);
      ended_.push_back(std::move(*outcome));
    } else {
      jobs_[key] = std::move(job);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<WallTime> next;
  for (const auto& [key, job] : jobs_) {
    if (!next || job.next < *next) next = job.next;
  }
  return next;
}

std::optional<AsyncDrainer::Outcome> AsyncDrainer::Advance(const std::string& key, Job& job, WallTime now) {
  Outcome out;
  out.key = key;
  out.node_name = job.node_name;
  out.started = job.opened;
  out.ended = now;
  if (!job.started) {
    Result<Drainer::Started> started = drainer_.Start(job.node_name, job.options, job.deadline);
    if (!started) {
      out.detail = started.error().ToString();
      switch (started.error().category()) {
        case ErrorCategory::kInvalidInput:
          out.end = End::kRefused;
          return out;
        case ErrorCategory::kNotFound:
          out.end = End::kDrained;  // the node is gone, and its pods with it
          out.detail = "node " + job.node_name + " is gone";
          return out;
        default:
          if (now >= job.deadline) return out;  // kFailed
          job.next = now + AtLeastOneSecond(job.options.retry_interval);
          return std::nullopt;
      }
    }
    job.started = *started;
    if (started->resumed) job.deadline = started->deadline;
  }
  Result<bool> done = drainer_.EvictRound(job.node_name, &job.result);
  out.result = job.result;
  if (done && *done) {
    drainer_.Succeeded(job.node_name, *job.started, job.options, job.result);
    out.end = End::kDrained;
    out.result = job.result;
    return out;
  }
  if (now >= job.started->deadline) {
    out.end = End::kTimedOut;
    out.detail = drainer_.GiveUp(job.node_name, *job.started, job.options, &job.result, false).message();
    out.result = job.result;
    return out;
  }
  job.next = std::min(job.started->deadline, now + AtLeastOneSecond(job.options.retry_interval));
  return std::nullopt;
}

void AsyncDrainer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker_.joinable() || stopping_) return;
  worker_ = std::thread([this] { Run(); });
}

void AsyncDrainer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void AsyncDrainer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    begun_ = false;
    lock.unlock();
    const std::optional<WallTime> next = Step();
    lock.lock();
    if (stopping_ || begun_) continue;
    // Until the next step is due (the clock may run faster than real time:
    // the wait is in real seconds); no drain open: until one begins.
    const Seconds wait = next ? std::max(Seconds(0), *next - clock_.WallNow()) + Seconds(1) : Seconds(3600);
    const auto real_wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::duration<double>(wait) / std::max(clock_.rate(), 1e-3));
    wake_.wait_for(lock, std::max(real_wait, std::chrono::milliseconds(1)), [this] { return stopping_ || begun_; });
  }
}

}  // namespace gpuscaler::kube
