#include "gpuscaler/daemon/policy_watcher.h"

#include <sys/stat.h>

#include <filesystem>
#include <functional>

#include "gpuscaler/model/text_file.h"
#include "gpuscaler/policy/loader.h"

namespace gpuscaler::daemon {
namespace {

// Only to notice that the text changed; the policy's own content hash
// (SHA-256 of its canonical form) is what the audit store records.
std::string TextKey(const std::string& text) {
  return std::to_string(text.size()) + ":" + std::to_string(std::hash<std::string>{}(text));
}

}  // namespace

PolicyWatcher::PolicyWatcher(std::string path, const Catalog& catalog, std::vector<std::string> served_regions)
    : path_(std::move(path)), catalog_(catalog), served_regions_(std::move(served_regions)) {}

std::optional<PolicyWatcher::FileIdentity> PolicyWatcher::Identify() const {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path_, ec);
  if (ec) return std::nullopt;
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return std::nullopt;
  FileIdentity id;
  id.target = target.string();
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

Result<Policy> PolicyWatcher::LoadInitial() {
  identity_ = Identify();
  Result<std::string> text = ReadConfigFile(path_);
  if (!text) return Error::Config("policy: " + text.error().message());
  PolicyLoadResult loaded = ParsePolicy(*text, path_, PolicyLoadOptions{&catalog_, served_regions_});
  if (!loaded.ok()) return loaded.status().error();
  text_hash_ = TextKey(*text);
  policy_ = std::move(loaded.policy);
  return policy_;
}

PolicyReload PolicyWatcher::Check() {
  PolicyReload out;
  std::optional<FileIdentity> id = Identify();
  if (!id) {
    // Gone or unreadable (mid-swap, or deleted): keep the policy in force and
    // look again next time. Not a rejection: nothing new was offered.
    identity_.reset();
    return out;
  }
  if (identity_ && *id == *identity_) return out;
  identity_ = id;
  Result<std::string> text = ReadConfigFile(path_);
  if (!text && text.error().category() != ErrorCategory::kConfig) {
    identity_.reset();
    return out;
  }
  if (text) {
    const std::string key = TextKey(*text);
    if (key == text_hash_) return out;  // touched, or swapped to the same text
    text_hash_ = key;
  } else {
    text_hash_.clear();  // over the size cap: a version offered and refused unread
  }
  PolicyLoadResult loaded;
  if (text) loaded = ParsePolicy(*text, path_, PolicyLoadOptions{&catalog_, served_regions_});
  if (const Status status = text ? loaded.status() : Status(text.error()); !status.ok()) {
    ++rejections_;
    out.kind = PolicyReload::Kind::kRejected;
    out.errors = status.error().message();
    last_errors_ = out.errors;
    return out;
  }
  ++reloads_;
  last_errors_.clear();
  policy_ = std::move(loaded.policy);
  out.kind = PolicyReload::Kind::kReloaded;
  return out;
}

}  // namespace gpuscaler::daemon
