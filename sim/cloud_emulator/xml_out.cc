#include "gpuscaler/model/escape.h"
#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {

void Leaf(std::string& out, std::string_view name, std::string_view value) {
  out += '<';
  out += name;
  if (value.empty()) {
    out += "/>";
    return;
  }
  out += '>';
  out += XmlEscape(value);
  out += "</";
  out += name;
  out += '>';
}

void TagSet(std::string& out, const std::map<std::string, std::string>& tags) {
  if (tags.empty()) return;
  out += "<tagSet>";
  for (const auto& [k, v] : tags) {
    out += "<item>";
    Leaf(out, "key", k);
    Leaf(out, "value", v);
    out += "</item>";
  }
  out += "</tagSet>";
}

std::string Ec2Time(WallTime t) {
  std::string s = FormatRfc3339(t);
  return s.substr(0, s.size() - 1) + ".000Z";
}

int StateCode(std::string_view state) {
  if (state == "pending") return 0;
  if (state == "running") return 16;
  if (state == "shutting-down") return 32;
  if (state == "terminated") return 48;
  if (state == "stopping") return 64;
  return 80;  // stopped
}

void StateChangeXml(std::string& out, const std::string& instance_id, std::string_view before,
                    std::string_view after) {
  out += "<item>";
  Leaf(out, "instanceId", instance_id);
  out += "<currentState>";
  Leaf(out, "code", std::to_string(StateCode(after)));
  Leaf(out, "name", after);
  out += "</currentState><previousState>";
  Leaf(out, "code", std::to_string(StateCode(before)));
  Leaf(out, "name", before);
  out += "</previousState></item>";
}

EmulatorResponse AsgEmptyAnswer(std::string_view op, const std::string& request_id, bool result) {
  std::string body = AsgOpen(op);
  if (result) body += "  <" + std::string(op) + "Result/>\n";
  body += "  <ResponseMetadata>";
  Leaf(body, "RequestId", request_id);
  body += "</ResponseMetadata>\n</" + std::string(op) + "Response>\n";
  return {200, "text/xml", {}, body};
}

std::string Ec2Open(std::string_view op, const std::string& request_id) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + std::string(op) + "Response xmlns=\"" + kEc2Ns + "\">\n";
  Leaf(out, "requestId", request_id);
  out += '\n';
  return out;
}

std::string AsgOpen(std::string_view op) {
  std::string out = "<";
  out += op;
  out += "Response xmlns=\"";
  out += kAsgNs;
  out += "\">\n";
  return out;
}

std::string AsgPageOpen(std::string_view op, std::string_view list) {
  return AsgOpen(op) + "  <" + std::string(op) + "Result>\n    <" + std::string(list) + ">";
}

std::string AsgPageClose(std::string_view op, std::string_view list, const std::string& next,
                         const std::string& request_id) {
  std::string out = "</" + std::string(list) + ">\n";
  if (!next.empty()) Leaf(out, "NextToken", next);
  out += "  </" + std::string(op) + "Result>\n  <ResponseMetadata>";
  Leaf(out, "RequestId", request_id);
  out += "</ResponseMetadata>\n</" + std::string(op) + "Response>\n";
  return out;
}

}  // namespace gpuscaler::sim
