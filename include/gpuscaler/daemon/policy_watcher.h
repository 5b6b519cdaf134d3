// Hot reload of the policy file.
//
// Polled, not inotify: Kubernetes updates a ConfigMap volume by writing a new
// timestamped folder and swapping the `..data` symlink the file's path goes
// through, so the watched inode never changes and inotify on the file misses
// it; editors that save by rename replace the inode instead. Each Check()
// therefore resolves the path through every symlink and compares the target,
// its inode, size and modification time with the last look (a stat or two,
// cheap enough for every tick), and only then reads and hashes the text. A
// changed text that validates becomes the policy; one that does not is
// rejected with every problem and the last good policy stays in force. The
// file is read and parsed within the caps of model/config_limits.h: a file
// over the size cap is rejected unread, and a YAML alias bomb at the first
// alias that takes the document past its cap.
// Not thread-safe: one thread calls Check().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::daemon {

struct PolicyReload {
  enum class Kind { kUnchanged, kReloaded, kRejected };
  Kind kind = Kind::kUnchanged;
  std::string errors;  // kRejected: every problem, one per line
};

class PolicyWatcher {
 public:
  // `catalog` must outlive the watcher (policies are checked against it).
  // `served_regions`: the cloud regions this installation can buy in (the
  // AWS provider's region); a policy whose pools ask for others is rejected,
  // at start and at every reload. Empty: any.
  PolicyWatcher(std::string path, const Catalog& catalog, std::vector<std::string> served_regions = {});

  // The first load: an invalid or missing file is a kConfig error (the daemon
  // must not start without a policy).
  Result<Policy> LoadInitial();
  // Looks at the file again; on kReloaded `policy()` is the new one.
  PolicyReload Check();

  const Policy& policy() const { return policy_; }
  const std::string& path() const { return path_; }
  int64_t reloads() const { return reloads_; }
  int64_t rejections() const { return rejections_; }
  // Errors of the last rejected version (empty once a good one loads).
  const std::string& last_errors() const { return last_errors_; }

 private:
  struct FileIdentity {
    std::string target;  // after resolving symlinks
    uint64_t inode = 0;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileIdentity&) const = default;
  };
  std::optional<FileIdentity> Identify() const;

  std::string path_;
  const Catalog& catalog_;
  std::vector<std::string> served_regions_;
  Policy policy_;
  std::optional<FileIdentity> identity_;
  std::string text_hash_;  // of the last text seen, good or bad
  int64_t reloads_ = 0;
  int64_t rejections_ = 0;
  std::string last_errors_;
};

}  // namespace gpuscaler::daemon
