// Fuzzes the Kubernetes object parsers: Pod, Node, PodList, NodeList, watch
// stream lines (ParseWatchEvent: the envelope and its object, as
// ClusterCache reads them), resource quantities, providerID and base64
// (kubeconfig data) decoding.
//
// Invariants (gpuscaler/kube/objects.h): never throws; a node's instance id
// is the one InstanceIdFromProviderId gives for its providerID; a quantity
// and the same quantity with its suffix spelled as milli agree; a watch
// line that is JSON is an event, and its pod or node only comes with
// ADDED/MODIFIED, under the key of its own namespace and name.
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

  for (const kube::WatchResource r : {kube::WatchResource::kPods, kube::WatchResource::kNodes}) {
    const auto event = kube::ParseWatchEvent(text, r);
    if (!event.ok()) continue;
    const bool object_event = event->type == "ADDED" || event->type == "MODIFIED";
    FUZZ_CHECK(object_event || (!event->pod && !event->node), "object with a %s event", event->type.c_str());
    FUZZ_CHECK(!(event->pod && event->node), "pod and node in one event");
    if (event->pod) {
      const std::string key = event->pod->namespace_name.empty() ? event->pod->name
                                                                 : event->pod->namespace_name + "/" + event->pod->name;
      FUZZ_CHECK(key == event->key, "pod key %s vs %s", key.c_str(), event->key.c_str());
    }
    if (event->node) FUZZ_CHECK(event->node->name == event->key, "node key %s", event->key.c_str());
  }

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
