// What the two emulators' scenario readers (scenario_file.cc: EC2 and Auto
// Scaling; gcp_scenario.cc: Compute Engine) share: how a problem in the file
// is reported, how key paths are spelled, how a list is walked, and how a
// document is loaded (yaml-cpp within the caps of model/config_limits.h,
// LoadBoundedYaml). Private to sim/cloud_emulator.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>

#include "gpuscaler/model/bounded_yaml.h"
#include "gpuscaler/status.h"

namespace gpuscaler::sim::scenario_yaml {

// A problem with the file, thrown by a reader; `message` starts with the
// path of the key at fault.
struct Problem {
  std::string message;
};

// The path of `key` in the mapping at `where` ("" at the root).
inline std::string KeyPath(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

// Calls read(item, "key[i]") for each item under `key` of `root` (nothing
// when the key is absent). The value is not checked to be a list: a scalar
// or null one has no items.
template <typename F>
void ForEachItem(const YAML::Node& root, const char* key, F&& read) {
  const YAML::Node list = root[key];
  if (!list) return;
  for (size_t i = 0; i < list.size(); ++i) read(list[i], std::string(key) + "[" + std::to_string(i) + "]");
}

// A scenario read from `text`: a default Scenario for an empty document,
// else the one read(root, scenario) fills in. A document LoadBoundedYaml
// refuses is its error; a Problem or a yaml-cpp exception that read throws
// is kConfig, "emulator scenario: " and what it says.
template <typename Scenario, typename Read>
Result<Scenario> ParseScenario(const std::string& text, Read&& read) {
  Scenario scenario;
  try {
    Result<YAML::Node> loaded = LoadBoundedYaml(text);
    if (!loaded) return loaded.error().WithContext("emulator scenario");
    const YAML::Node root = *loaded;
    if (!root || root.IsNull()) return scenario;
    read(root, scenario);
  } catch (const Problem& p) {
    return Error::Config("emulator scenario: " + p.message);
  } catch (const YAML::Exception& e) {
    return Error::Config(std::string("emulator scenario: ") + e.what());
  }
  return scenario;
}

}  // namespace gpuscaler::sim::scenario_yaml
