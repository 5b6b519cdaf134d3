// Loading and validating policy files.
//
// YAML and JSON share one schema and one document tree (yaml_document.h): a
// file named *.json is strict JSON, any other YAML, and errors point at the
// place either way. Files are read and parsed within the caps of
// model/config_limits.h (4 MiB; 250000 nodes with YAML aliases expanded), so
// an alias bomb is one problem, not an out-of-memory kill. `file_name` of
// ParsePolicy names the file in problems and picks the format the same way.
// Validation collects every problem, not just the first:
// unknown fields (typos must not be silently ignored), wrong types, values out
// of range, and cross-field checks (min <= max, shares in [0,1], a class that
// no pool can serve). Each problem is a ConfigProblem,
// "file:line:col: field.path: message".
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/yaml_document.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

struct PolicyLoadResult {
  Policy policy;                       // meaningful only when problems is empty
  std::vector<ConfigProblem> problems;
  bool ok() const { return problems.empty(); }
  // All problems, one per line; kConfig error when not ok.
  Status status() const;
};

// What a load checks besides the file itself.
struct PolicyLoadOptions {
  // When given, names are checked against it (instance types, families, GPU
  // models, regions, zones, MIG profiles) and every pool must match a priced
  // GPU instance type. Not owned; used only during the call.
  const Catalog* catalog = nullptr;
  // The cloud regions this installation serves (the daemon's cloud region);
  // empty: any. A pool region outside them, or a pool zone in none of them,
  // is a problem at pools[i].regions or pools[i].zones: such a pool could
  // only fail at every launch.
  std::vector<std::string> regions;
};

PolicyLoadResult LoadPolicyFile(const std::string& path, const PolicyLoadOptions& options);
PolicyLoadResult ParsePolicy(const std::string& text, const std::string& file_name,
                             const PolicyLoadOptions& options);
// The same with only a catalog (may be null).
PolicyLoadResult LoadPolicyFile(const std::string& path, const Catalog* catalog = nullptr);
PolicyLoadResult ParsePolicy(const std::string& text, const std::string& file_name,
                             const Catalog* catalog = nullptr);

// The policy as canonical text: every field (defaults included) in a fixed
// order, one "path=value" per line, without source_file and content_hash. Two
// files that differ only in formatting, comments, key order or in spelling a
// default out give the same text.
std::string CanonicalPolicyText(const Policy& policy);
// SHA-256 (lowercase hex) of CanonicalPolicyText: Policy::content_hash.
std::string PolicyContentHash(const Policy& policy);

// A policy with one pool (every GPU type, on-demand and spot) and one default
// class: what gpuscaler uses when no policy file is given.
Policy DefaultPolicy();

}  // namespace gpuscaler
