// Fuzzes the instance catalog loader, each input as YAML (fuzz-catalog.yaml)
// and as strict JSON (fuzz-catalog.json).
//
// Invariants: never throws; an error names the file ("file:line:col: ..."
// per problem); an accepted catalog only prices offerings of instance types
// it lists, with finite, non-negative prices and interruption rates, and
// enumerating its offerings is deterministic.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/model/catalog.h"

namespace {

void CheckCatalog(const std::string& text, const std::string& file) {
  gpuscaler::Result<gpuscaler::Catalog> c = gpuscaler::ParseCatalog(text, file);
  if (!c.ok()) {
    const std::string msg = c.error().message();
    FUZZ_CHECK(!msg.empty(), "empty error");
    // Problems come one per line, each starting with the file name, but a
    // message may quote an input value that itself holds a newline, so only
    // the first line is sure to start with it.
    FUZZ_CHECK(msg.rfind(file + ":", 0) == 0, "problem without the file name: %s", msg.c_str());
    return;
  }
  const std::vector<gpuscaler::Offering> offerings = c->Offerings();
  for (const gpuscaler::Offering& o : offerings) {
    FUZZ_CHECK(c->FindInstanceType(o.instance_type) != nullptr, "offering of unknown type %s", o.Key().c_str());
    FUZZ_CHECK(std::isfinite(o.usd_per_hour) && o.usd_per_hour >= 0, "%s price %g", o.Key().c_str(), o.usd_per_hour);
    FUZZ_CHECK(std::isfinite(o.on_demand_usd_per_hour) && o.on_demand_usd_per_hour >= 0, "%s on-demand %g",
               o.Key().c_str(), o.on_demand_usd_per_hour);
    FUZZ_CHECK(std::isfinite(o.interruptions_per_hour) && o.interruptions_per_hour >= 0, "%s rate %g",
               o.Key().c_str(), o.interruptions_per_hour);
  }
  const std::vector<gpuscaler::Offering> again = c->Offerings();
  FUZZ_CHECK(again.size() == offerings.size(), "offerings not deterministic");
  for (size_t i = 0; i < again.size(); ++i)
    FUZZ_CHECK(again[i].Key() == offerings[i].Key(), "offering order not deterministic");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckCatalog(text, "fuzz-catalog.yaml");
  CheckCatalog(text, "fuzz-catalog.json");
  return 0;
}
