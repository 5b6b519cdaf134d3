// The path of a committed trace or market fixture (sim/testdata/traces).
#pragma once

#include <string>

namespace gpuscaler::sim::testing {

inline std::string Fixture(const std::string& name) {
  return std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/traces/" + name;
}

}  // namespace gpuscaler::sim::testing
