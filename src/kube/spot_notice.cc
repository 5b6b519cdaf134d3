#include "gpuscaler/kube/spot_notice.h"

#include <nlohmann/json.hpp>

#include "gpuscaler/kube/cluster_provider.h"
#include "gpuscaler/kube/objects.h"

namespace gpuscaler::kube {

std::string FormatSpotNoticeMessage(const NodeSpotNotice& notice) {
  return "NotBefore=" + FormatRfc3339(notice.not_before) + " EventId=" + notice.event_id;
}

std::optional<NodeSpotNotice> ParseSpotNoticeMessage(std::string_view reason, std::string_view message) {
  auto field = [&](std::string_view name) -> std::string {
    const std::string key = std::string(name) + "=";
    size_t at = message.find(key);
    // A whole word only: "XNotBefore=" is not NotBefore.
    while (at != std::string_view::npos && at > 0 && message[at - 1] != ' ') at = message.find(key, at + 1);
    if (at == std::string_view::npos) return "";
    const size_t from = at + key.size();
    const size_t end = message.find(' ', from);
    return std::string(
        message.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from));
  };
  NodeSpotNotice n;
  n.event_type = std::string(reason);
  n.event_id = field("EventId");
  if (!ParseRfc3339(field("NotBefore"), &n.not_before)) return std::nullopt;
  return n;
}

std::string SpotNoticeStatusPatch(const NodeSpotNotice& notice, WallTime now) {
  const std::string stamp = FormatRfc3339(now);
  const nlohmann::json condition = {
      {"type", kSpotPreemptedCondition}, {"status", "True"},
      {"reason", notice.event_type},     {"message", FormatSpotNoticeMessage(notice)},
      {"lastHeartbeatTime", stamp},      {"lastTransitionTime", stamp}};
  return nlohmann::json{{"status", {{"conditions", nlohmann::json::array({condition})}}}}.dump();
}

std::vector<InterruptionNotice> SpotNoticesFromNodes(const std::vector<NodeInfo>& nodes, WallTime now) {
  std::vector<InterruptionNotice> out;
  for (const NodeInfo& n : nodes) {
    if (!n.spot_notice || n.instance_id.empty()) continue;
    InterruptionNotice notice;
    notice.instance_id = n.instance_id;
    notice.notice_time = now;
    notice.deadline = n.spot_notice->not_before;
    out.push_back(std::move(notice));
  }
  return out;
}

}  // namespace gpuscaler::kube
