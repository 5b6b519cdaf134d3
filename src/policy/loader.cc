// Placeholder until the policy loader lands (being written now).
#include "gpuscaler/policy/loader.h"
namespace gpuscaler {
std::string PolicyProblem::ToString() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + field + ": " + message; }
Status PolicyLoadResult::status() const { return ok() ? Status() : Status(Error::Config(problems.front().ToString())); }
PolicyLoadResult LoadPolicyFile(const std::string& path, const Catalog*) { PolicyLoadResult r; r.problems.push_back({path, 0, 0, "", "policy loader not built yet"}); return r; }
PolicyLoadResult ParsePolicy(const std::string&, const std::string& f, const Catalog*) { PolicyLoadResult r; r.problems.push_back({f, 0, 0, "", "policy loader not built yet"}); return r; }
Policy DefaultPolicy() { Policy p; p.pools.push_back({}); p.pools[0].name = "gpu"; p.classes.push_back({}); p.classes[0].name = "default"; return p; }
}
