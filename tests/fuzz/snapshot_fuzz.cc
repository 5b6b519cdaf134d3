// Fuzzes the JSON snapshot reader (docs/snapshot.md).
//
// Invariants (gpuscaler/model/json.h): never throws; every problem line
// names the file; an accepted snapshot formats, parses back, and formats to
// the same bytes (Snapshot -> JSON -> Snapshot -> JSON is byte-identical).
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/model/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz-snap.json";
  gpuscaler::Result<gpuscaler::Snapshot> s = gpuscaler::ParseSnapshotJson(text, file);
  if (!s.ok()) {
    // The first line at least (a message may quote a value with a newline).
    FUZZ_CHECK(s.error().message().rfind(file + ":", 0) == 0, "problem without the file name: %s",
               s.error().message().c_str());
    return 0;
  }
  const std::string once = gpuscaler::FormatSnapshotJson(*s);
  gpuscaler::Result<gpuscaler::Snapshot> back = gpuscaler::ParseSnapshotJson(once, file);
  FUZZ_CHECK(back.ok(), "own output rejected: %s\n%s", back.error().message().c_str(), once.c_str());
  const std::string twice = gpuscaler::FormatSnapshotJson(*back);
  FUZZ_CHECK(once == twice, "round trip changed the snapshot:\n%s\n---\n%s", once.c_str(), twice.c_str());
  return 0;
}
