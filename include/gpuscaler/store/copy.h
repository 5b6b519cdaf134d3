// Copying an audit store into another: `gpuscaler db copy --from F.db --to
// postgresql://…` (and back). Every table, in one transaction on the target;
// runs, decisions and actions get new ids there (their references follow),
// so several clusters' stores copied into one database stay apart, each run
// still named as its daemon named it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "gpuscaler/status.h"

namespace gpuscaler {

struct CopySummary {
  std::map<std::string, int64_t> rows;  // rows copied, by table
};

// Copies the store at `from` (a file or URL at this binary's schema version,
// else kConfig: open it once with the daemon to migrate it) into `to`
// (created or migrated first). A target that holds any of the source's
// actions or nodes already (a second copy of the same store) is refused with
// kInvalidInput and left as it was; so is any failure: nothing is half
// copied.
Result<CopySummary> CopyAuditStore(const std::string& from, const std::string& to);

}  // namespace gpuscaler
