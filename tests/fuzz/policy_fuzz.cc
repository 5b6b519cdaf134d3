// Fuzzes the policy parser with the repository's AWS catalog, so the
// cross-checks against instance types, families and zones run too. Every
// input is read twice: as YAML (fuzz.yaml, yaml-cpp with the alias
// expansion cap) and as strict JSON (fuzz.json, nlohmann's SAX parser).
//
// Invariants: never throws; every problem names the file and either a line
// or a field path; an accepted policy hashes its canonical text, and parsing
// the same text twice gives the same policy (no hidden state).
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/loader.h"

namespace {

const gpuscaler::Catalog* RepoCatalog() {
  static const gpuscaler::Catalog* catalog = [] {
    auto c = gpuscaler::LoadCatalogFile(std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml");
    FUZZ_CHECK(c.ok(), "repository catalog: %s", c.error().ToString().c_str());
    return new gpuscaler::Catalog(std::move(c).value());
  }();
  return catalog;
}

void CheckPolicy(const std::string& text, const std::string& file) {
  const gpuscaler::PolicyLoadResult r = gpuscaler::ParsePolicy(text, file, RepoCatalog());
  if (!r.ok()) {
    for (const gpuscaler::ConfigProblem& p : r.problems) {
      FUZZ_CHECK(p.file == file, "problem without the file name: %s", p.ToString().c_str());
      FUZZ_CHECK(p.line > 0 || !p.field.empty(), "problem without place: %s", p.ToString().c_str());
      FUZZ_CHECK(!p.message.empty(), "empty message: %s", p.ToString().c_str());
      FUZZ_CHECK(p.ToString().rfind(file + ":", 0) == 0, "%s", p.ToString().c_str());
    }
    FUZZ_CHECK(!r.status().ok(), "rejected policy with an ok status");
    return;
  }
  const std::string canonical = gpuscaler::CanonicalPolicyText(r.policy);
  FUZZ_CHECK(r.policy.content_hash == gpuscaler::PolicyContentHash(r.policy), "hash is not of the canonical text");
  FUZZ_CHECK(r.policy.source_file == file, "source_file %s", r.policy.source_file.c_str());
  const gpuscaler::PolicyLoadResult again = gpuscaler::ParsePolicy(text, file, RepoCatalog());
  FUZZ_CHECK(again.ok(), "second parse rejected what the first accepted");
  FUZZ_CHECK(gpuscaler::CanonicalPolicyText(again.policy) == canonical, "two parses differ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckPolicy(text, "fuzz.yaml");
  CheckPolicy(text, "fuzz.json");
  return 0;
}
