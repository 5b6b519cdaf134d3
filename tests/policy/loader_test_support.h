// Shared by the policy loader's tests (loader_*_test.cc,
// example_policies_test.cc): the smallest valid policy, a pool with the
// smallest node template, the row type of the tables of invalid policies, and
// problems joined for failure messages.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"

namespace gpuscaler::testing {

// The smallest valid policy; tests edit it or replace it.
inline constexpr const char* kMinimal = R"(apiVersion: gpuscaler/v1
kind: Policy
pools:
  - name: gpu
classes:
  - name: default
)";

inline std::string Join(const std::vector<ConfigProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.ToString() + "\n";
  return out;
}

// A pool with the smallest node template (lines 5-8); cases append lines 9+.
inline constexpr const char* kTemplatePool =
    "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
    "  - name: gpu\n    node_template:\n      instance_profile: p\n      security_groups: [sg-1]\n";

// kTemplatePool with its security groups replaced by `groups`.
inline std::string WithSecurityGroups(const std::string& groups) {
  std::string text = kTemplatePool;
  const std::string ids = "security_groups: [sg-1]";
  return text.replace(text.find(ids), ids.size(), "security_groups: " + groups);
}

struct InvalidCase {
  std::string name;
  std::string text;  // appended to kMinimal when `append`, else the whole file
  bool append;
  std::string field;
  int line;
  std::string message;  // substring
};

}  // namespace gpuscaler::testing
