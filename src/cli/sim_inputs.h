// The inputs of one replay, as `gpuscaler sim` and `gpuscaler sim sweep` take
// them, and the scenario they make: one function, so a sweep cell replays
// exactly what the single command would. Private to src/cli.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "sim/scenario.h"

namespace gpuscaler::cli {

struct SimInputs {
  std::string scenario;       // built-in scenario name, or
  std::string trace_file;     // a trace file with its format
  std::string trace_format;
  std::string prices_file;
  std::string prices_format;
  std::string catalog_file;   // empty: the default catalog
  uint64_t seed = 1;
  int days = 0;               // 0: the scenario's
  std::string cbl_instance_types;  // cbl-availability: "type[,also,...]"
  int cbl_nodes_when_up = 0;       // cbl-availability: 0 keeps the source count
  std::string runtime_knowledge = "class";  // class | exact (sim::Scenario::runtimes_known)
  std::string forecast = "learned";         // learned | oracle (sim::Scenario::forecast)
  std::string multi_node = "gang";          // gang | split | whole (sim::TraceOptions::multi_node)
  std::string reservations_file;  // sim/reservations_file.h; empty: none
};

// The catalog the inputs name, and where it came from.
Result<Catalog> LoadSimCatalog(const SimInputs& in, std::string* source);

// The scenario to replay with `policy` (none: the scenario's own, or the
// default policy for a trace). Trace warnings go to `*warnings`.
Result<sim::Scenario> BuildSimScenario(const SimInputs& in, const Catalog& catalog, const std::string& catalog_source,
                                       const std::optional<Policy>& policy, const std::string& policy_source,
                                       std::vector<std::string>* warnings);

}  // namespace gpuscaler::cli
