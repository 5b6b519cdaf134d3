// GcpProvider: the compact placement resource policies of gang launches.
#include "gcp_provider_impl.h"
#include "gpuscaler/model/json_fields.h"

namespace gpuscaler::cloud {

using nlohmann::json;

namespace {

// Whether a ResourcePolicy resource is a compact (collocated) placement.
bool IsCompactPlacement(const json& policy) {
  return StringAt(ObjectAt(policy, "groupPlacementPolicy"), "collocation") == "COLLOCATED";
}

}  // namespace

Status GcpProvider::EnsureResourcePolicy(const std::string& pool, const std::string& region,
                                         const std::string& name) {
  const std::string key = region + "/" + name;
  if (resource_policies_.count(key) != 0) return Status::Ok();
  const std::string where = "pool '" + pool + "': resource policy '" + name + "' in " + region;
  const std::string collection = "projects/" + options_.project + "/regions/" + region + "/resourcePolicies";
  auto accept = [&](const json& policy) -> Status {
    if (!IsCompactPlacement(policy)) {
      return Error::Config(where + " exists and is not a compact placement policy (groupPlacementPolicy "
                                   "collocation COLLOCATED): name another in the policy, or delete that one");
    }
    resource_policies_.insert(key);
    return Status::Ok();
  };
  Result<json> found = client_.Call("GET", collection + "/" + name);
  if (found) return accept(*found);
  if (found.error().category() != ErrorCategory::kNotFound) return found.error().WithContext(where);

  const json body = {{"name", name},
                     {"description", "gpuscaler " + options_.cluster_name + ": compact placement of pool " + pool +
                                         "'s gangs"},
                     {"groupPlacementPolicy", {{"collocation", "COLLOCATED"}}}};
  std::optional<Error> failed;
  Result<json> sent =
      client_.Call("POST", collection + "?requestId=" + RequestId("resourcePolicies.insert/" + key), body);
  if (!sent) {
    failed = sent.error();
  } else if (Result<GcpOperation> op = Wait(*sent); !op) {
    failed = op.error();
  } else if (!op->errors.empty()) {
    failed = GcpErrorFrom("resourcePolicies.insert", op->errors, op->http_error_status);
  } else if (!op->done()) {
    failed = Error::Transient("resourcePolicies.insert: operation " + op->name + " not done after " +
                              std::to_string(options_.operation_timeout.count()) + "s");
  }
  if (!failed) {
    resource_policies_.insert(key);
    return Status::Ok();
  }
  // Another replica may have made it meanwhile (409 alreadyExists): read it back.
  Result<json> again = client_.Call("GET", collection + "/" + name);
  if (again) return accept(*again);
  return failed->WithContext(where);
}

}  // namespace gpuscaler::cloud
