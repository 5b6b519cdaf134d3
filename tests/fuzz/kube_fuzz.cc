// Fuzzes the Kubernetes object parsers: Pod, Node, PodList, NodeList (the
// list and watch answers' objects go through the same code), resource
// quantities, providerID and base64 (kubeconfig data) decoding.
//
// The watch stream's event envelope (type/object per line) is read inside
// ClusterCache from a live connection and is not reachable without a
// socket; its objects are.
//
// Invariants (gpuscaler/kube/objects.h): never throws; a node's instance id
// is the one InstanceIdFromProviderId gives for its providerID; a quantity
// and the same quantity with its suffix spelled as milli agree.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/kube/config.h"
#include "gpuscaler/kube/objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace kube = gpuscaler::kube;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)kube::ParsePod(text);
  (void)kube::ParsePodList(text);
  if (auto node = kube::ParseNode(text); node.ok())
    FUZZ_CHECK(node->instance_id == kube::InstanceIdFromProviderId(node->provider_id), "instance id %s of %s",
               node->instance_id.c_str(), node->provider_id.c_str());
  if (auto list = kube::ParseNodeList(text); list.ok())
    for (const kube::NodeInfo& n : list->items)
      FUZZ_CHECK(n.instance_id == kube::InstanceIdFromProviderId(n.provider_id), "list instance id");

  if (size <= 64) {
    (void)kube::InstanceIdFromProviderId(text);
    (void)kube::Base64Decode(text);
    // A plain integer N and "Nk"/"N000m" name the same amount.
    if (auto q = kube::ParseQuantityMilli(text); q.has_value() && !text.empty() &&
                                                 text.find_first_not_of("0123456789") == std::string_view::npos &&
                                                 text.size() < 10) {
      const auto milli = kube::ParseQuantityMilli(std::string(text) + "000m");
      FUZZ_CHECK(milli.has_value() && *milli == *q, "%.*s vs %.*s000m", static_cast<int>(size), text.data(),
                 static_cast<int>(size), text.data());
    }
  }
  return 0;
}
