// A policy sweep's grid (`gpuscaler sim sweep --grid GRID.yaml`): the file
// read and checked, and the policy of one cell (a policy file with the
// grid's overrides applied). The sweep itself is sim_sweep.cc.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "sim_inputs.h"

namespace gpuscaler::cli::sweep {

struct GridTrace {
  std::string name;
  SimInputs in;  // scenario or trace; days; cbl options
};

struct GridMarket {
  std::string name;
  std::string prices_file;  // empty: no market file (a built-in scenario's own, or none)
  std::string prices_format;
};

struct GridPolicy {
  std::string name;
  std::string file;      // empty: the trace's own policy
  std::string baseline;  // empty: gpuscaler's planner
};

// One parameter of the sweep: a dotted policy path and its values.
struct GridOverride {
  std::string path;
  std::vector<YAML::Node> values;
};

struct Grid {
  std::string file;
  std::string catalog_file;
  std::vector<GridTrace> traces;
  std::vector<GridMarket> markets;
  std::vector<GridPolicy> policies;
  std::vector<GridOverride> overrides;
  std::vector<uint64_t> seeds;
};

// Reads and checks the grid; paths in it are relative to the grid file.
Result<Grid> ReadGrid(const std::string& file);

// The policy of a cell: the file (or none, for a trace's own policy) with
// the overrides `set` applied, loaded and checked like any policy file.
Result<std::optional<Policy>> CellPolicy(const GridPolicy& p, const std::vector<std::pair<std::string, YAML::Node>>& set,
                                         const Catalog& catalog);

}  // namespace gpuscaler::cli::sweep
