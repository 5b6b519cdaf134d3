// FakeWorkSource: pending and running work and signal states set by the test.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/controller/work_source.h"

namespace gpuscaler::testing {

class FakeWorkSource final : public WorkSource {
 public:
  std::vector<SignalStatus> signals;

  void SetPending(std::vector<DemandUnit> units) {
    pending_ = std::move(units);
    ++version_;
  }
  void SetRunning(const std::string& instance_id, std::vector<DemandUnit> units) {
    running_[instance_id] = std::move(units);
    running_version_[instance_id] = ++version_;
  }

  const std::vector<DemandUnit>& Pending() override { return pending_; }
  uint64_t PendingVersion() const override { return version_; }
  const std::vector<DemandUnit>& RunningOn(const std::string& id) override {
    static const std::vector<DemandUnit> kNone;
    auto it = running_.find(id);
    return it == running_.end() ? kNone : it->second;
  }
  uint64_t RunningVersion(const std::string& id) const override {
    auto it = running_version_.find(id);
    return it == running_version_.end() ? 0 : it->second;
  }
  std::vector<SignalStatus> Signals() const override { return signals; }

 private:
  std::vector<DemandUnit> pending_;
  std::map<std::string, std::vector<DemandUnit>> running_;
  std::map<std::string, uint64_t> running_version_;
  uint64_t version_ = 1;
};

}  // namespace gpuscaler::testing
