// YAML alias bombs ("billion laughs") for the tests of the configuration
// caps. Made at run time, so that no such file sits in the tree for other
// tools (editors, linters, fuzzers) to expand.
#pragma once

#include <string>

namespace gpuscaler::testing {

// A policy whose top-level keys a, b, c, ... (lines 4, 5, 6, ...) are
// anchored lists of ten: `a` of ten scalars, each next one of ten aliases of
// the one before, and the last is used as the families of a pool. `levels`
// from 1 to 26; expanded, the last list alone is (10^(levels+1) - 1) / 9
// nodes. Seven levels: about 420 bytes for eleven million nodes.
inline std::string AliasBombPolicy(int levels) {
  std::string text = "apiVersion: gpuscaler/v1\nkind: Policy\nname: alias-bomb\n";
  for (int level = 0; level < levels; ++level) {
    const std::string name(1, static_cast<char>('a' + level));
    const std::string item = level == 0 ? "x" : "*" + std::string(1, static_cast<char>('a' + level - 1));
    text += name + ": &" + name + " [";
    for (int i = 0; i < 10; ++i) text += (i == 0 ? "" : ", ") + item;
    text += "]\n";
  }
  text +=
      "pools:\n  - name: gpu\n    families: *" + std::string(1, static_cast<char>('a' + levels - 1)) + "\n";
  return text;
}

}  // namespace gpuscaler::testing
