#include "sim/cloud_emulator/emulator.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"

namespace gpuscaler::sim {
namespace {

constexpr const char* kEc2Ns = "http://ec2.amazonaws.com/doc/2016-11-15/";
constexpr const char* kAsgNs = "http://autoscaling.amazonaws.com/doc/2011-01-01/";
constexpr const char* kXmlContentType = "text/xml;charset=UTF-8";

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

void Leaf(std::string& out, std::string_view name, std::string_view value) {
  out += '<';
  out += name;
  if (value.empty()) {
    out += "/>";
    return;
  }
  out += '>';
  out += Esc(value);
  out += "</";
  out += name;
  out += '>';
}

// EC2 timestamps carry milliseconds: "2026-12-02T10:00:00.000Z".
std::string Ec2Time(WallTime t) {
  std::string s = FormatRfc3339(t);
  return s.substr(0, s.size() - 1) + ".000Z";
}

int StateCode(std::string_view state) {
  if (state == "pending") return 0;
  if (state == "running") return 16;
  if (state == "shutting-down") return 32;
  if (state == "terminated") return 48;
  return 80;
}

bool Glob(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '*') {
    for (size_t i = 0; i <= text.size(); ++i) {
      if (Glob(pattern.substr(1), text.substr(i))) return true;
    }
    return false;
  }
  if (text.empty()) return false;
  if (pattern[0] != '?' && pattern[0] != text[0]) return false;
  return Glob(pattern.substr(1), text.substr(1));
}

bool ParseInt(const std::string& s, int* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = static_cast<int>(v);
  return true;
}

std::string PageToken(size_t offset) { return "emu-" + std::to_string(offset); }
bool ParsePageToken(const std::string& token, size_t* offset) {
  if (token.rfind("emu-", 0) != 0) return false;
  int v = 0;
  if (!ParseInt(token.substr(4), &v) || v < 0) return false;
  *offset = static_cast<size_t>(v);
  return true;
}

}  // namespace

struct CloudEmulator::Params {
  cloud::QueryParams q;
  std::string Get(const std::string& key) const { return cloud::FormValue(q, key).value_or(""); }
  bool Has(const std::string& key) const { return cloud::FormValue(q, key).has_value(); }
  bool HasPrefix(const std::string& prefix) const {
    return std::any_of(q.begin(), q.end(), [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
  }
  // Values of prefix.1, prefix.2, … (up to the first gap).
  std::vector<std::string> List(const std::string& prefix) const {
    std::vector<std::string> out;
    for (int n = 1;; ++n) {
      auto v = cloud::FormValue(q, prefix + "." + std::to_string(n));
      if (!v) break;
      out.push_back(*v);
    }
    return out;
  }
};

CloudEmulator::CloudEmulator(EmulatorScenario scenario, const Clock& clock)
    : scenario_(std::move(scenario)), clock_(clock), start_(clock.WallNow()), rng_(scenario_.seed) {
  for (const ScriptedInterruption& i : scenario_.interruptions) interruptions_left_.push_back(i.count);
  for (const ScriptedGroup& g : scenario_.groups) groups_.push_back({g, start_});
  std::lock_guard lock(mu_);
  for (Group& g : groups_) ReconcileGroup(g, start_);
}

std::string CloudEmulator::NewId(std::string_view prefix, int hex_digits) {
  const uint64_t v = SplitMix(next_id_++ ^ (scenario_.seed * 0x100000001b3ULL));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%0*" PRIx64, hex_digits > 16 ? 16 : hex_digits, v);
  std::string hex = buf;
  while (static_cast<int>(hex.size()) < hex_digits) hex = "0" + hex;
  return std::string(prefix) + hex.substr(0, hex_digits);
}

std::vector<EmulatedInstance> CloudEmulator::Instances() const {
  std::lock_guard lock(mu_);
  std::vector<EmulatedInstance> out;
  for (const Instance& i : instances_) out.push_back(i.info);
  return out;
}

EmulatorStats CloudEmulator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status CloudEmulator::Interrupt(const std::string& instance_id, Seconds notice) {
  std::lock_guard lock(mu_);
  const WallTime now = clock_.WallNow();
  AdvanceLocked(now);
  return InterruptLocked(instance_id, notice, now);
}

std::string CloudEmulator::Uuid() {
  return NewId("", 8) + "-" + NewId("", 4) + "-" + NewId("", 4) + "-" + NewId("", 4) + "-" + NewId("", 12);
}

Status CloudEmulator::InterruptLocked(const std::string& instance_id, Seconds notice, WallTime now) {
  auto it = by_id_.find(instance_id);
  if (it == by_id_.end()) return Error::NotFound("no instance " + instance_id);
  Instance& i = instances_[it->second];
  if (i.info.state != "pending" && i.info.state != "running") return Error::NotFound(instance_id + " is not live");
  nlohmann::json event = {
      {"version", "0"},
      {"id", Uuid()},
      {"detail-type", "EC2 Spot Instance Interruption Warning"},
      {"source", "aws.ec2"},
      {"account", scenario_.account_id},
      {"time", FormatRfc3339(now)},
      {"region", scenario_.region},
      {"resources", {"arn:aws:ec2:" + scenario_.region + ":" + scenario_.account_id + ":instance/" + instance_id}},
      {"detail", {{"instance-id", instance_id}, {"instance-action", "terminate"}}}};
  Enqueue(event.dump(), now);
  pending_interruptions_.push_back({instance_id, now + notice});
  return Status::Ok();
}

void CloudEmulator::Enqueue(std::string body, WallTime now) {
  Message m;
  m.id = Uuid();
  m.body = std::move(body);
  m.visible_at = now;
  queue_.push_back(std::move(m));
}

void CloudEmulator::AdvanceLocked(WallTime now) {
  for (Instance& i : instances_) {
    if (i.info.state == "pending" && now >= i.running_at) i.info.state = "running";
  }
  // A scripted interruption stays armed from `at` until it has hit `count`
  // instances, so it also catches spot instances launched later.
  for (size_t k = 0; k < scenario_.interruptions.size(); ++k) {
    const ScriptedInterruption& s = scenario_.interruptions[k];
    if (interruptions_left_[k] <= 0 || now < start_ + s.at) continue;
    std::vector<std::string> victims;
    for (const Instance& i : instances_) {
      if (static_cast<int>(victims.size()) == interruptions_left_[k]) break;
      if (i.info.lifecycle != CapacityType::kSpot || (i.info.state != "running" && i.info.state != "pending")) continue;
      if (!s.instance_type.empty() && s.instance_type != i.info.instance_type) continue;
      if (!s.zone.empty() && s.zone != i.info.zone) continue;
      const bool already = std::any_of(pending_interruptions_.begin(), pending_interruptions_.end(),
                                       [&](const auto& p) { return p.instance_id == i.info.instance_id; });
      if (already) continue;
      victims.push_back(i.info.instance_id);
    }
    for (const std::string& id : victims) {
      if (InterruptLocked(id, s.notice, now).ok()) --interruptions_left_[k];
    }
  }
  for (auto it = pending_interruptions_.begin(); it != pending_interruptions_.end();) {
    if (now >= it->terminate_at) {
      auto idx = by_id_.find(it->instance_id);
      if (idx != by_id_.end()) Terminate(instances_[idx->second], it->terminate_at);
      it = pending_interruptions_.erase(it);
    } else {
      ++it;
    }
  }
  for (Instance& i : instances_) {
    if (i.info.state == "shutting-down" && i.shutting_down_at && now >= *i.shutting_down_at + scenario_.terminate_latency) {
      i.info.state = "terminated";
      i.terminated_at = *i.shutting_down_at + scenario_.terminate_latency;
    }
  }
  for (Group& g : groups_) ReconcileGroup(g, now);
}

int CloudEmulator::LiveCount(const std::string& type, const std::string& zone, CapacityType lifecycle) const {
  int n = 0;
  for (const Instance& i : instances_) {
    if ((i.info.state == "pending" || i.info.state == "running") && i.info.instance_type == type &&
        i.info.zone == zone && i.info.lifecycle == lifecycle) {
      ++n;
    }
  }
  return n;
}

std::optional<std::pair<int, std::string>> CloudEmulator::Room(const std::string& type, const std::string& zone,
                                                               CapacityType lifecycle, WallTime now) const {
  std::optional<std::pair<int, std::string>> best;
  for (const CapacityLimit& c : scenario_.capacity) {
    if (!c.instance_type.empty() && c.instance_type != type) continue;
    if (!c.zone.empty() && c.zone != zone) continue;
    if (c.capacity_type && *c.capacity_type != lifecycle) continue;
    if (c.from && now < start_ + *c.from) continue;
    if (c.until && now >= start_ + *c.until) continue;
    const int room = std::max(0, c.limit - LiveCount(type, zone, lifecycle));
    if (!best || room < best->first) best = std::make_pair(room, c.error_code);
  }
  return best;
}

CloudEmulator::Instance& CloudEmulator::Launch(const std::string& type, const std::string& zone,
                                               const std::string& subnet, CapacityType lifecycle,
                                               const std::map<std::string, std::string>& tags,
                                               const std::string& client_token, const std::string& reservation,
                                               WallTime now) {
  Instance i;
  i.info.instance_id = NewId("i-", 17);
  i.info.instance_type = type;
  i.info.zone = zone;
  i.info.subnet_id = subnet;
  if (i.info.subnet_id.empty()) {
    for (const auto& [id, z] : scenario_.subnets) {
      if (z == zone) {
        i.info.subnet_id = id;
        break;
      }
    }
  }
  i.info.lifecycle = lifecycle;
  i.info.state = "pending";
  i.info.launch_time = now;
  i.info.tags = tags;
  i.info.client_token = client_token;
  i.running_at = now + scenario_.launch_latency;
  i.reservation_id = reservation;
  by_id_[i.info.instance_id] = instances_.size();
  instances_.push_back(std::move(i));
  ++stats_.launched;
  return instances_.back();
}

void CloudEmulator::Terminate(Instance& i, WallTime now) {
  if (i.info.state == "pending" || i.info.state == "running") {
    i.info.state = "shutting-down";
    i.shutting_down_at = now;
  }
}

void CloudEmulator::ReconcileGroup(Group& g, WallTime now) {
  std::vector<Instance*> live;
  for (Instance& i : instances_) {
    if (i.info.group == g.spec.name && (i.info.state == "pending" || i.info.state == "running")) live.push_back(&i);
  }
  const int desired = g.spec.desired_capacity;
  while (static_cast<int>(live.size()) > desired) {
    Terminate(*live.back(), now);
    live.pop_back();
  }
  const std::vector<std::string>& zones = g.spec.zones.empty() ? scenario_.zones : g.spec.zones;
  while (static_cast<int>(live.size()) < desired && !zones.empty()) {
    // The zone with the fewest live instances of the group (AZ balance).
    std::string zone = zones[0];
    size_t fewest = SIZE_MAX;
    for (const std::string& z : zones) {
      const size_t n = std::count_if(live.begin(), live.end(), [&](Instance* i) { return i->info.zone == z; });
      if (n < fewest) {
        fewest = n;
        zone = z;
      }
    }
    std::map<std::string, std::string> tags = g.spec.tags;
    tags["aws:autoscaling:groupName"] = g.spec.name;
    Instance& i = Launch(g.spec.instance_type, zone, "", CapacityType::kOnDemand, tags, "", NewId("r-", 17), now);
    i.info.group = g.spec.name;
    live.push_back(&i);
  }
}

// ---- errors ---------------------------------------------------------------

EmulatorResponse CloudEmulator::Ec2Error(int status, const std::string& code, const std::string& message) {
  std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>";
  Leaf(body, "Code", code);
  Leaf(body, "Message", message);
  body += "</Error></Errors>";
  Leaf(body, "RequestID", Uuid());
  body += "</Response>";
  return {status, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::QueryError(int status, const std::string& type, const std::string& code,
                                           const std::string& message) {
  std::string body = std::string("<ErrorResponse xmlns=\"") + kAsgNs + "\">\n  <Error>";
  Leaf(body, "Type", type);
  Leaf(body, "Code", code);
  Leaf(body, "Message", message);
  body += "</Error>\n  ";
  Leaf(body, "RequestId", Uuid());
  body += "\n</ErrorResponse>\n";
  return {status, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::SqsError(int status, const std::string& code, const std::string& query_code,
                                         const std::string& message) {
  nlohmann::json j = {{"__type", "com.amazonaws.sqs#" + code}, {"message", message}};
  return {status, cloud::kSqsJsonContentType, {{"x-amzn-query-error", query_code + ";Sender"}}, j.dump()};
}

std::optional<EmulatorResponse> CloudEmulator::CheckAuth(const EmulatorRequest& request, std::string_view service) {
  auto fail = [&](int status, const std::string& code, const std::string& message) -> EmulatorResponse {
    ++stats_.auth_failures;
    if (service == "sqs") return SqsError(status, code, code, message);
    if (service == "autoscaling") return QueryError(status, "Sender", code, message);
    return Ec2Error(status, code, message);
  };
  const std::string authz = cloud::HeaderValue(request.headers, "Authorization");
  if (authz.empty()) return fail(401, "MissingAuthenticationToken", "Request is missing Authentication Token");
  auto parsed = cloud::ParseAuthorization(authz);
  if (!parsed.ok()) return fail(400, "IncompleteSignature", "Authorization header is not a SigV4 signature");
  if (parsed->region != scenario_.region) {
    return fail(401, "AuthFailure", "Credential should be scoped to a valid region, not '" + parsed->region + "'.");
  }
  if (parsed->service != service) {
    return fail(401, "AuthFailure",
                "Credential should be scoped to correct service: '" + std::string(service) + "'.");
  }
  auto secret = scenario_.credentials.find(parsed->access_key_id);
  if (secret == scenario_.credentials.end()) return std::nullopt;
  cloud::SigningRequest sr;
  sr.method = request.method;
  const size_t q = request.target.find('?');
  sr.path = request.target.substr(0, q);
  if (q != std::string::npos) sr.query = request.target.substr(q + 1);
  sr.headers = request.headers;
  sr.body = request.body;
  cloud::SigningParams params;
  params.region = parsed->region;
  params.service = parsed->service;
  const std::string date = cloud::HeaderValue(request.headers, "X-Amz-Date");
  if (date.size() != 16) return fail(400, "IncompleteSignature", "X-Amz-Date is missing or malformed");
  const std::string rfc = date.substr(0, 4) + "-" + date.substr(4, 2) + "-" + date.substr(6, 2) + "T" +
                          date.substr(9, 2) + ":" + date.substr(11, 2) + ":" + date.substr(13, 2) + "Z";
  if (!ParseRfc3339(rfc, &params.time) || cloud::AmzDay(params.time) != parsed->day) {
    return fail(400, "IncompleteSignature", "X-Amz-Date does not match the credential scope date");
  }
  // The path as the client signed it: the decoded one, re-encoded by the canonicaliser.
  sr.path = cloud::UriDecode(sr.path);
  const std::string creq = cloud::CanonicalRequestFor(sr, params, parsed->signed_headers);
  const std::string want = cloud::Signature(secret->second, cloud::StringToSign(creq, params), params);
  if (want != parsed->signature) {
    return fail(403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.");
  }
  return std::nullopt;
}

// ---- dispatch -------------------------------------------------------------

std::vector<EmulatorRequestRecord> CloudEmulator::Requests() const {
  std::lock_guard lock(mu_);
  return {requests_.begin(), requests_.end()};
}

EmulatorResponse CloudEmulator::Handle(const EmulatorRequest& request) {
  std::lock_guard lock(mu_);
  if (request.method == "GET" && request.target == "/_emulator/requests") {
    nlohmann::json out = nlohmann::json::array();
    for (const EmulatorRequestRecord& r : requests_) {
      out.push_back({{"steady_ms", std::chrono::duration_cast<std::chrono::milliseconds>(r.steady.time_since_epoch()).count()},
                     {"time", FormatRfc3339(r.time)},
                     {"service", r.service},
                     {"action", r.action},
                     {"client_token", r.client_token},
                     {"status", r.status},
                     {"error_code", r.error_code}});
    }
    return {200, "application/json", {}, out.dump()};
  }
  EmulatorRequestRecord record;
  EmulatorResponse response = Dispatch(request, &record);
  {
    record.status = response.status;
    if (response.status >= 300) {
      // Query errors say <Code>…</Code>; SQS's JSON errors "__type": "…#Code".
      const std::string& b = response.body;
      if (size_t at = b.find("<Code>"); at != std::string::npos) {
        const size_t end = b.find("</Code>", at);
        if (end != std::string::npos) record.error_code = b.substr(at + 6, end - at - 6);
      } else if (size_t hash = b.find('#'); hash != std::string::npos) {
        record.error_code = b.substr(hash + 1, b.find('"', hash) - hash - 1);
      }
    }
    requests_.push_back(std::move(record));
    if (requests_.size() > 100000) requests_.pop_front();
  }
  return response;
}

EmulatorResponse CloudEmulator::Dispatch(const EmulatorRequest& request, EmulatorRequestRecord* record) {
  const WallTime now = clock_.WallNow();
  record->time = now;
  record->steady = clock_.Now();
  AdvanceLocked(now);
  ++stats_.requests;

  const std::string target = cloud::HeaderValue(request.headers, "X-Amz-Target");
  if (target.rfind(cloud::kSqsTargetPrefix, 0) == 0) {
    record->service = "sqs";
    record->action = target.substr(std::string_view(cloud::kSqsTargetPrefix).size());
    if (auto denied = CheckAuth(request, "sqs")) return *denied;
    return Sqs(request, std::string_view(target).substr(std::string_view(cloud::kSqsTargetPrefix).size()), now);
  }

  Params p;
  const size_t qmark = request.target.find('?');
  if (qmark != std::string::npos) p.q = cloud::DecodeForm(request.target.substr(qmark + 1));
  for (auto& kv : cloud::DecodeForm(request.body)) p.q.push_back(std::move(kv));
  const std::string action = p.Get("Action");
  static const std::vector<std::string> kEc2 = {"CreateFleet", "TerminateInstances", "DescribeInstances",
                                                "DescribeSpotPriceHistory"};
  static const std::vector<std::string> kAsg = {"SetDesiredCapacity", "DescribeAutoScalingGroups",
                                                "TerminateInstanceInAutoScalingGroup"};
  const bool ec2 = std::find(kEc2.begin(), kEc2.end(), action) != kEc2.end();
  const bool asg = std::find(kAsg.begin(), kAsg.end(), action) != kAsg.end();
  record->service = asg ? "autoscaling" : "ec2";
  record->action = action;
  if (action == "CreateFleet") record->client_token = p.Get("ClientToken");
  if (!ec2 && !asg) {
    if (action.empty()) return Ec2Error(400, "MissingAction", "The request must contain the parameter Action");
    return Ec2Error(400, "InvalidAction", "The action " + action + " is not valid for this web service.");
  }
  if (auto denied = CheckAuth(request, ec2 ? "ec2" : "autoscaling")) return *denied;

  ++api_calls_;
  const bool throttle_nth = scenario_.throttle_every > 0 && api_calls_ % scenario_.throttle_every == 0;
  std::uniform_real_distribution<double> u(0, 1);
  const bool throttle_rand = scenario_.throttle_rate > 0 && u(rng_) < scenario_.throttle_rate;
  if (throttle_nth || throttle_rand) {
    ++stats_.throttled;
    return ec2 ? Ec2Error(503, "RequestLimitExceeded", "Request limit exceeded.")
               : QueryError(400, "Sender", "Throttling", "Rate exceeded");
  }
  if (scenario_.server_error_rate > 0 && u(rng_) < scenario_.server_error_rate) {
    ++stats_.server_errors;
    return ec2 ? Ec2Error(503, "Unavailable", "The server is overloaded and can't handle the request.")
               : QueryError(500, "Receiver", "InternalFailure", "An internal error occurred.");
  }

  if (action == "CreateFleet") return CreateFleet(p, now);
  if (action == "TerminateInstances") return TerminateInstances(p, now);
  if (action == "DescribeInstances") return DescribeInstances(p);
  if (action == "DescribeSpotPriceHistory") return DescribeSpotPriceHistory(p);
  if (action == "SetDesiredCapacity") return SetDesiredCapacity(p, now);
  if (action == "DescribeAutoScalingGroups") return DescribeAutoScalingGroups(p);
  return TerminateInstanceInAutoScalingGroup(p, now);
}

// ---- EC2 ------------------------------------------------------------------

namespace {

std::string Ec2Open(std::string_view op, const std::string& request_id) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + std::string(op) + "Response xmlns=\"" + kEc2Ns + "\">\n";
  Leaf(out, "requestId", request_id);
  out += '\n';
  return out;
}

}  // namespace

EmulatorResponse CloudEmulator::CreateFleet(const Params& p, WallTime now) {
  ++stats_.create_fleet_calls;
  const std::string token = p.Get("ClientToken");
  if (!token.empty()) {
    if (auto it = fleet_answers_.find(token); it != fleet_answers_.end()) return {200, kXmlContentType, {}, it->second};
  }
  const std::string type = p.Has("Type") ? p.Get("Type") : "maintain";
  if (type != "instant") {
    return Ec2Error(400, "InvalidParameterValue", "This emulator supports only Type=instant fleets, not '" + type + "'.");
  }
  int total = 0;
  if (!ParseInt(p.Get("TargetCapacitySpecification.TotalTargetCapacity"), &total) || total < 0) {
    return Ec2Error(400, "MissingParameter", "The request must contain the parameter TargetCapacitySpecification.TotalTargetCapacity");
  }
  const std::string default_type = p.Get("TargetCapacitySpecification.DefaultTargetCapacityType");
  if (default_type != "spot" && default_type != "on-demand") {
    return Ec2Error(400, "InvalidParameterValue", "DefaultTargetCapacityType must be spot or on-demand.");
  }
  int on_demand = -1, spot = -1;
  if (p.Has("TargetCapacitySpecification.OnDemandTargetCapacity")) ParseInt(p.Get("TargetCapacitySpecification.OnDemandTargetCapacity"), &on_demand);
  if (p.Has("TargetCapacitySpecification.SpotTargetCapacity")) ParseInt(p.Get("TargetCapacitySpecification.SpotTargetCapacity"), &spot);
  if (default_type == "spot") {
    if (on_demand < 0) on_demand = spot >= 0 ? total - spot : 0;
    spot = total - on_demand;
  } else {
    if (spot < 0) spot = on_demand >= 0 ? total - on_demand : 0;
    on_demand = total - spot;
  }
  if (spot < 0 || on_demand < 0) {
    return Ec2Error(400, "InvalidParameterValue", "Target capacities do not add up to TotalTargetCapacity.");
  }

  struct Override {
    std::string lt_id, lt_name, lt_version;
    std::string type, zone, subnet;
    double priority = 1e300;
    bool by_subnet = false;
    size_t order = 0;
  };
  std::vector<Override> overrides;
  for (int k = 1; p.HasPrefix("LaunchTemplateConfigs." + std::to_string(k) + "."); ++k) {
    const std::string lt = "LaunchTemplateConfigs." + std::to_string(k) + ".";
    Override base;
    base.lt_id = p.Get(lt + "LaunchTemplateSpecification.LaunchTemplateId");
    base.lt_name = p.Get(lt + "LaunchTemplateSpecification.LaunchTemplateName");
    base.lt_version = p.Get(lt + "LaunchTemplateSpecification.Version");
    if (base.lt_id.empty() && base.lt_name.empty()) {
      return Ec2Error(400, "MissingParameter", "A launch template ID or name is required.");
    }
    for (int n = 1; p.HasPrefix(lt + "Overrides." + std::to_string(n) + "."); ++n) {
      const std::string o = lt + "Overrides." + std::to_string(n) + ".";
      Override ov = base;
      ov.type = p.Get(o + "InstanceType");
      ov.zone = p.Get(o + "AvailabilityZone");
      ov.subnet = p.Get(o + "SubnetId");
      if (ov.type.empty()) return Ec2Error(400, "MissingParameter", "Each override needs an InstanceType in this emulator.");
      if (!ov.subnet.empty()) {
        auto s = scenario_.subnets.find(ov.subnet);
        if (s == scenario_.subnets.end()) {
          return Ec2Error(400, "InvalidSubnetID.NotFound", "The subnet ID '" + ov.subnet + "' does not exist");
        }
        if (ov.zone.empty()) ov.zone = s->second;
        ov.by_subnet = true;
      }
      if (ov.zone.empty()) ov.zone = scenario_.zones.empty() ? scenario_.region + "a" : scenario_.zones[0];
      else if (std::find(scenario_.zones.begin(), scenario_.zones.end(), ov.zone) == scenario_.zones.end()) {
        return Ec2Error(400, "InvalidParameterValue", "Invalid availability zone: [" + ov.zone + "]");
      }
      if (p.Has(o + "Priority")) ov.priority = std::strtod(p.Get(o + "Priority").c_str(), nullptr);
      ov.order = overrides.size();
      overrides.push_back(ov);
    }
  }
  if (overrides.empty()) return Ec2Error(400, "MissingParameter", "At least one launch template override is required.");

  std::map<std::string, std::string> tags;
  for (int n = 1; p.Has("TagSpecification." + std::to_string(n) + ".ResourceType"); ++n) {
    const std::string ts = "TagSpecification." + std::to_string(n) + ".";
    if (p.Get(ts + "ResourceType") != "instance") continue;
    for (int m = 1; p.Has(ts + "Tag." + std::to_string(m) + ".Key"); ++m) {
      tags[p.Get(ts + "Tag." + std::to_string(m) + ".Key")] = p.Get(ts + "Tag." + std::to_string(m) + ".Value");
    }
  }

  // The spot price in force now, for lowest-price / price-capacity-optimized.
  auto spot_price = [&](const Override& o) {
    double price = 1e300;
    WallTime best{};
    for (const ScriptedPrice& sp : scenario_.spot_prices) {
      if (sp.instance_type == o.type && sp.zone == o.zone && sp.time <= now && sp.time >= best) {
        best = sp.time;
        price = sp.usd_per_hour;
      }
    }
    return price;
  };
  auto od_price = [&](const Override& o) {
    auto it = scenario_.on_demand_prices.find(o.type);
    return it == scenario_.on_demand_prices.end() ? 1e300 : it->second;
  };

  const std::string fleet_id = "fleet-" + Uuid();
  const std::string reservation = NewId("r-", 17);
  struct Got {
    const Override* o;
    CapacityType lifecycle;
    std::vector<std::string> ids;
  };
  struct Err {
    const Override* o;
    CapacityType lifecycle;
    std::string code, message;
  };
  std::vector<Got> got;
  std::vector<Err> errors;
  for (CapacityType lifecycle : {CapacityType::kOnDemand, CapacityType::kSpot}) {
    int need = lifecycle == CapacityType::kSpot ? spot : on_demand;
    if (need == 0) continue;
    std::vector<const Override*> order;
    for (const Override& o : overrides) order.push_back(&o);
    const std::string strategy = lifecycle == CapacityType::kSpot ? p.Get("SpotOptions.AllocationStrategy")
                                                                  : p.Get("OnDemandOptions.AllocationStrategy");
    std::stable_sort(order.begin(), order.end(), [&](const Override* a, const Override* b) {
      if (strategy == "prioritized" || strategy == "capacity-optimized-prioritized") return a->priority < b->priority;
      if (lifecycle == CapacityType::kSpot) {
        if (strategy == "capacity-optimized") return false;
        return spot_price(*a) < spot_price(*b);
      }
      return od_price(*a) < od_price(*b);  // on-demand default: lowest-price
    });
    for (const Override* o : order) {
      if (need == 0) break;
      auto room = Room(o->type, o->zone, lifecycle, now);
      const int want = need;
      const int take = room ? std::min(want, room->first) : want;
      if (take > 0) {
        Got g{o, lifecycle, {}};
        for (int n = 0; n < take; ++n) {
          g.ids.push_back(Launch(o->type, o->zone, o->subnet, lifecycle, tags, token, reservation, now).info.instance_id);
        }
        got.push_back(std::move(g));
        need -= take;
      }
      if (take < want) {
        const std::string code = room->second;
        std::string message = code == "InsufficientInstanceCapacity"
                                  ? "We currently do not have sufficient " + o->type + " capacity in the Availability Zone you requested (" + o->zone + ")."
                                  : "There is no " + std::string(ToString(lifecycle)) + " capacity available that matches your request.";
        errors.push_back({o, lifecycle, code, message});
      }
    }
  }

  auto lto = [&](std::string& out, const Override& o) {
    out += "<launchTemplateAndOverrides><launchTemplateSpecification>";
    if (!o.lt_id.empty()) Leaf(out, "launchTemplateId", o.lt_id);
    else Leaf(out, "launchTemplateName", o.lt_name);
    if (!o.lt_version.empty()) Leaf(out, "version", o.lt_version);
    out += "</launchTemplateSpecification><overrides>";
    Leaf(out, "instanceType", o.type);
    if (o.by_subnet) Leaf(out, "subnetId", o.subnet);
    else Leaf(out, "availabilityZone", o.zone);
    if (o.priority < 1e300) Leaf(out, "priority", std::to_string(o.priority));
    out += "</overrides></launchTemplateAndOverrides>";
  };
  std::string body = Ec2Open("CreateFleet", Uuid());
  Leaf(body, "fleetId", fleet_id);
  body += "\n<errorSet>";
  for (const Err& e : errors) {
    body += "<item>";
    lto(body, *e.o);
    Leaf(body, "lifecycle", ToString(e.lifecycle));
    Leaf(body, "errorCode", e.code);
    Leaf(body, "errorMessage", e.message);
    body += "</item>";
  }
  body += "</errorSet>\n<fleetInstanceSet>";
  for (const Got& g : got) {
    body += "<item>";
    lto(body, *g.o);
    Leaf(body, "lifecycle", ToString(g.lifecycle));
    body += "<instanceIds>";
    for (const std::string& id : g.ids) Leaf(body, "item", id);
    body += "</instanceIds>";
    Leaf(body, "instanceType", g.o->type);
    body += "</item>";
  }
  body += "</fleetInstanceSet>\n</CreateFleetResponse>\n";
  if (!token.empty()) fleet_answers_[token] = body;
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::TerminateInstances(const Params& p, WallTime now) {
  const std::vector<std::string> ids = p.List("InstanceId");
  if (ids.empty()) return Ec2Error(400, "MissingParameter", "The request must contain the parameter InstanceId");
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (id.rfind("i-", 0) != 0) return Ec2Error(400, "InvalidInstanceID.Malformed", "Invalid id: \"" + id + "\"");
    if (by_id_.count(id) == 0) missing.push_back(id);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& id : missing) list += (list.empty() ? "" : ", ") + id;
    return Ec2Error(400, "InvalidInstanceID.NotFound",
                    missing.size() == 1 ? "The instance ID '" + list + "' does not exist"
                                        : "The instance IDs '" + list + "' do not exist");
  }
  std::string body = Ec2Open("TerminateInstances", Uuid());
  body += "<instancesSet>";
  for (const std::string& id : ids) {
    Instance& i = instances_[by_id_[id]];
    const std::string before = i.info.state;
    Terminate(i, now);
    body += "<item>";
    Leaf(body, "instanceId", id);
    body += "<currentState>";
    Leaf(body, "code", std::to_string(StateCode(i.info.state)));
    Leaf(body, "name", i.info.state);
    body += "</currentState><previousState>";
    Leaf(body, "code", std::to_string(StateCode(before)));
    Leaf(body, "name", before);
    body += "</previousState></item>";
  }
  body += "</instancesSet>\n</TerminateInstancesResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeInstances(const Params& p) {
  const WallTime now = clock_.WallNow();
  const std::vector<std::string> ids = p.List("InstanceId");
  for (const std::string& id : ids) {
    if (by_id_.count(id) == 0) return Ec2Error(400, "InvalidInstanceID.NotFound", "The instance ID '" + id + "' does not exist");
  }
  struct F {
    std::string name;
    std::vector<std::string> values;
  };
  std::vector<F> filters;
  for (int n = 1; p.Has("Filter." + std::to_string(n) + ".Name"); ++n) {
    F f{p.Get("Filter." + std::to_string(n) + ".Name"), p.List("Filter." + std::to_string(n) + ".Value")};
    static const std::vector<std::string> kKnown = {"tag-key", "instance-state-name", "instance-type", "availability-zone",
                                                    "instance-lifecycle", "client-token", "instance-id", "subnet-id"};
    if (f.name.rfind("tag:", 0) != 0 && std::find(kKnown.begin(), kKnown.end(), f.name) == kKnown.end()) {
      return Ec2Error(400, "InvalidParameterValue", "The filter '" + f.name + "' is invalid");
    }
    filters.push_back(std::move(f));
  }
  int max_results = 0;
  if (p.Has("MaxResults")) {
    if (!ids.empty()) {
      return Ec2Error(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults");
    }
    if (!ParseInt(p.Get("MaxResults"), &max_results) || max_results < 5 || max_results > 1000) {
      return Ec2Error(400, "InvalidParameterValue", "Value for parameter maxResults is invalid. Expecting a value between 5 and 1000.");
    }
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return Ec2Error(400, "InvalidParameterValue", "The token is invalid.");
  }
  auto any = [](const std::vector<std::string>& patterns, const std::string& v) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& pat) { return Glob(pat, v); });
  };
  std::vector<const Instance*> match;
  for (const Instance& i : instances_) {
    if (i.terminated_at && now >= *i.terminated_at + scenario_.terminated_visible) continue;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), i.info.instance_id) == ids.end()) continue;
    bool ok = true;
    for (const F& f : filters) {
      if (f.name.rfind("tag:", 0) == 0) {
        auto t = i.info.tags.find(f.name.substr(4));
        ok = t != i.info.tags.end() && any(f.values, t->second);
      } else if (f.name == "tag-key") {
        ok = std::any_of(i.info.tags.begin(), i.info.tags.end(), [&](const auto& kv) { return any(f.values, kv.first); });
      } else if (f.name == "instance-state-name") {
        ok = any(f.values, i.info.state);
      } else if (f.name == "instance-type") {
        ok = any(f.values, i.info.instance_type);
      } else if (f.name == "availability-zone") {
        ok = any(f.values, i.info.zone);
      } else if (f.name == "instance-lifecycle") {
        ok = i.info.lifecycle == CapacityType::kSpot && any(f.values, "spot");
      } else if (f.name == "client-token") {
        ok = any(f.values, i.info.client_token);
      } else if (f.name == "instance-id") {
        ok = any(f.values, i.info.instance_id);
      } else if (f.name == "subnet-id") {
        ok = any(f.values, i.info.subnet_id);
      }
      if (!ok) break;
    }
    if (ok) match.push_back(&i);
  }
  const size_t end = max_results > 0 ? std::min(match.size(), offset + static_cast<size_t>(max_results)) : match.size();
  std::string body = Ec2Open("DescribeInstances", Uuid());
  body += "<reservationSet>";
  for (size_t k = offset; k < end;) {
    const std::string& res = match[k]->reservation_id;
    body += "<item>";
    Leaf(body, "reservationId", res);
    Leaf(body, "ownerId", scenario_.account_id);
    body += "<groupSet/><instancesSet>";
    for (; k < end && match[k]->reservation_id == res; ++k) {
      const EmulatedInstance& i = match[k]->info;
      body += "<item>";
      Leaf(body, "instanceId", i.instance_id);
      Leaf(body, "imageId", "ami-0abcdef1234567890");
      body += "<instanceState>";
      Leaf(body, "code", std::to_string(StateCode(i.state)));
      Leaf(body, "name", i.state);
      body += "</instanceState>";
      Leaf(body, "privateDnsName", "");
      Leaf(body, "dnsName", "");
      Leaf(body, "reason", i.state == "shutting-down" || i.state == "terminated" ? "User initiated" : "");
      Leaf(body, "amiLaunchIndex", "0");
      body += "<productCodes/>";
      Leaf(body, "instanceType", i.instance_type);
      Leaf(body, "launchTime", Ec2Time(i.launch_time));
      body += "<placement>";
      Leaf(body, "availabilityZone", i.zone);
      Leaf(body, "groupName", "");
      Leaf(body, "tenancy", "default");
      body += "</placement><monitoring><state>disabled</state></monitoring>";
      if (!i.subnet_id.empty()) Leaf(body, "subnetId", i.subnet_id);
      Leaf(body, "architecture", "x86_64");
      Leaf(body, "rootDeviceType", "ebs");
      Leaf(body, "rootDeviceName", "/dev/xvda");
      body += "<blockDeviceMapping/>";
      if (i.lifecycle == CapacityType::kSpot) Leaf(body, "instanceLifecycle", "spot");
      Leaf(body, "virtualizationType", "hvm");
      Leaf(body, "clientToken", i.client_token);
      if (!i.tags.empty()) {
        body += "<tagSet>";
        for (const auto& [k2, v] : i.tags) {
          body += "<item>";
          Leaf(body, "key", k2);
          Leaf(body, "value", v);
          body += "</item>";
        }
        body += "</tagSet>";
      }
      Leaf(body, "hypervisor", "xen");
      body += "</item>";
    }
    body += "</instancesSet></item>";
  }
  body += "</reservationSet>\n";
  if (end < match.size()) {
    Leaf(body, "nextToken", PageToken(end));
    body += '\n';
  }
  body += "</DescribeInstancesResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeSpotPriceHistory(const Params& p) {
  const WallTime now = clock_.WallNow();
  std::vector<std::string> types = p.List("InstanceType");
  std::string zone = p.Get("AvailabilityZone");
  for (int n = 1; p.Has("Filter." + std::to_string(n) + ".Name"); ++n) {
    const std::string name = p.Get("Filter." + std::to_string(n) + ".Name");
    const std::vector<std::string> values = p.List("Filter." + std::to_string(n) + ".Value");
    if (name == "instance-type") types.insert(types.end(), values.begin(), values.end());
    if (name == "availability-zone" && !values.empty()) zone = values[0];
  }
  WallTime start{}, end = now;
  if (p.Has("StartTime") && !cloud::ParseAwsTime(p.Get("StartTime"), &start)) {
    return Ec2Error(400, "InvalidParameterValue", "Invalid value for StartTime");
  }
  if (p.Has("EndTime") && !cloud::ParseAwsTime(p.Get("EndTime"), &end)) {
    return Ec2Error(400, "InvalidParameterValue", "Invalid value for EndTime");
  }
  end = std::min(end, now);  // a scripted future is not history yet
  int max_results = 1000;
  if (p.Has("MaxResults") && (!ParseInt(p.Get("MaxResults"), &max_results) || max_results < 1 || max_results > 1000)) {
    return Ec2Error(400, "InvalidParameterValue", "MaxResults must be between 1 and 1000");
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !p.Get("NextToken").empty() && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return Ec2Error(400, "InvalidNextToken", "The specified token is invalid.");
  }
  std::vector<const ScriptedPrice*> in;
  std::map<std::pair<std::string, std::string>, const ScriptedPrice*> before;  // in force at start
  for (const ScriptedPrice& sp : scenario_.spot_prices) {
    if (!types.empty() && std::find(types.begin(), types.end(), sp.instance_type) == types.end()) continue;
    if (!zone.empty() && sp.zone != zone) continue;
    if (sp.time > end) continue;
    if (sp.time >= start) {
      in.push_back(&sp);
    } else {
      auto& b = before[{sp.instance_type, sp.zone}];
      if (b == nullptr || sp.time > b->time) b = &sp;
    }
  }
  for (const auto& [key, sp] : before) in.push_back(sp);
  std::stable_sort(in.begin(), in.end(), [](const ScriptedPrice* a, const ScriptedPrice* b) {
    if (a->time != b->time) return a->time > b->time;
    return std::tie(a->instance_type, a->zone) < std::tie(b->instance_type, b->zone);
  });
  const size_t last = std::min(in.size(), offset + static_cast<size_t>(max_results));
  std::string body = Ec2Open("DescribeSpotPriceHistory", Uuid());
  body += "<spotPriceHistorySet>";
  for (size_t k = offset; k < last; ++k) {
    char price[32];
    std::snprintf(price, sizeof price, "%.6f", in[k]->usd_per_hour);
    body += "<item>";
    Leaf(body, "instanceType", in[k]->instance_type);
    Leaf(body, "productDescription", "Linux/UNIX");
    Leaf(body, "spotPrice", price);
    Leaf(body, "timestamp", Ec2Time(in[k]->time));
    Leaf(body, "availabilityZone", in[k]->zone);
    body += "</item>";
  }
  body += "</spotPriceHistorySet>\n";
  Leaf(body, "nextToken", last < in.size() ? PageToken(last) : "");
  body += "\n</DescribeSpotPriceHistoryResponse>\n";
  return {200, kXmlContentType, {}, body};
}

// ---- Auto Scaling ---------------------------------------------------------

namespace {

std::string AsgOpen(std::string_view op) {
  return "<" + std::string(op) + "Response xmlns=\"" + kAsgNs + "\">\n";
}

}  // namespace

EmulatorResponse CloudEmulator::SetDesiredCapacity(const Params& p, WallTime now) {
  const std::string name = p.Get("AutoScalingGroupName");
  int desired = 0;
  if (name.empty() || !ParseInt(p.Get("DesiredCapacity"), &desired)) {
    return QueryError(400, "Sender", "ValidationError", "AutoScalingGroupName and DesiredCapacity are required");
  }
  auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Group& x) { return x.spec.name == name; });
  if (g == groups_.end()) {
    return QueryError(400, "Sender", "ValidationError", "AutoScalingGroup name not found - AutoScalingGroup '" + name + "' not found");
  }
  if (desired > g->spec.max_size) {
    return QueryError(400, "Sender", "ValidationError",
                      "New SetDesiredCapacity value " + std::to_string(desired) + " is above max value " +
                          std::to_string(g->spec.max_size) + " for the AutoScaling group.");
  }
  if (desired < g->spec.min_size) {
    return QueryError(400, "Sender", "ValidationError",
                      "New SetDesiredCapacity value " + std::to_string(desired) + " is below min value " +
                          std::to_string(g->spec.min_size) + " for the AutoScaling group.");
  }
  g->spec.desired_capacity = desired;
  ReconcileGroup(*g, now);
  std::string body = AsgOpen("SetDesiredCapacity") + "  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</SetDesiredCapacityResponse>\n";
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::DescribeAutoScalingGroups(const Params& p) {
  const std::vector<std::string> names = p.List("AutoScalingGroupNames.member");
  int max_records = 50;
  if (p.Has("MaxRecords") && (!ParseInt(p.Get("MaxRecords"), &max_records) || max_records < 1 || max_records > 100)) {
    return QueryError(400, "Sender", "ValidationError", "MaxRecords must be between 1 and 100");
  }
  size_t offset = 0;
  if (p.Has("NextToken") && !ParsePageToken(p.Get("NextToken"), &offset)) {
    return QueryError(400, "Sender", "InvalidNextToken", "The token is invalid.");
  }
  std::vector<const Group*> match;
  for (const Group& g : groups_) {
    if (!names.empty() && std::find(names.begin(), names.end(), g.spec.name) == names.end()) continue;
    bool ok = true;
    for (int n = 1; ok && p.Has("Filters.member." + std::to_string(n) + ".Name"); ++n) {
      const std::string f = p.Get("Filters.member." + std::to_string(n) + ".Name");
      const std::vector<std::string> values = p.List("Filters.member." + std::to_string(n) + ".Values.member");
      auto has = [&](const std::string& v) { return std::find(values.begin(), values.end(), v) != values.end(); };
      if (f.rfind("tag:", 0) == 0) {
        auto t = g.spec.tags.find(f.substr(4));
        ok = t != g.spec.tags.end() && has(t->second);
      } else if (f == "tag-key") {
        ok = std::any_of(g.spec.tags.begin(), g.spec.tags.end(), [&](const auto& kv) { return has(kv.first); });
      } else if (f == "tag-value") {
        ok = std::any_of(g.spec.tags.begin(), g.spec.tags.end(), [&](const auto& kv) { return has(kv.second); });
      }
    }
    if (ok) match.push_back(&g);
  }
  const size_t last = std::min(match.size(), offset + static_cast<size_t>(max_records));
  std::string body = AsgOpen("DescribeAutoScalingGroups") + "  <DescribeAutoScalingGroupsResult>\n    <AutoScalingGroups>";
  for (size_t k = offset; k < last; ++k) {
    const Group& g = *match[k];
    const std::vector<std::string>& zones = g.spec.zones.empty() ? scenario_.zones : g.spec.zones;
    body += "<member>";
    Leaf(body, "AutoScalingGroupName", g.spec.name);
    Leaf(body, "AutoScalingGroupARN", "arn:aws:autoscaling:" + scenario_.region + ":" + scenario_.account_id +
                                          ":autoScalingGroup:" + NewId("", 8) + ":autoScalingGroupName/" + g.spec.name);
    Leaf(body, "MinSize", std::to_string(g.spec.min_size));
    Leaf(body, "MaxSize", std::to_string(g.spec.max_size));
    Leaf(body, "DesiredCapacity", std::to_string(g.spec.desired_capacity));
    Leaf(body, "DefaultCooldown", "300");
    body += "<AvailabilityZones>";
    for (const std::string& z : zones) Leaf(body, "member", z);
    body += "</AvailabilityZones><LoadBalancerNames/><TargetGroupARNs/>";
    Leaf(body, "HealthCheckType", "EC2");
    Leaf(body, "HealthCheckGracePeriod", "300");
    body += "<Instances>";
    for (const Instance& i : instances_) {
      if (i.info.group != g.spec.name || i.info.state == "terminated") continue;
      body += "<member>";
      Leaf(body, "InstanceId", i.info.instance_id);
      Leaf(body, "InstanceType", i.info.instance_type);
      Leaf(body, "AvailabilityZone", i.info.zone);
      Leaf(body, "LifecycleState", i.info.state == "pending" ? "Pending" : i.info.state == "running" ? "InService" : "Terminating");
      Leaf(body, "HealthStatus", "Healthy");
      Leaf(body, "ProtectedFromScaleIn", "false");
      body += "</member>";
    }
    body += "</Instances>";
    Leaf(body, "CreatedTime", FormatRfc3339(g.created));
    body += "<SuspendedProcesses/><EnabledMetrics/><Tags>";
    for (const auto& [key, value] : g.spec.tags) {
      body += "<member>";
      Leaf(body, "ResourceId", g.spec.name);
      Leaf(body, "ResourceType", "auto-scaling-group");
      Leaf(body, "Key", key);
      Leaf(body, "Value", value);
      Leaf(body, "PropagateAtLaunch", "true");
      body += "</member>";
    }
    body += "</Tags><TerminationPolicies><member>Default</member></TerminationPolicies>";
    Leaf(body, "NewInstancesProtectedFromScaleIn", "false");
    Leaf(body, "CapacityRebalance", "false");
    body += "</member>";
  }
  body += "</AutoScalingGroups>\n";
  if (last < match.size()) Leaf(body, "NextToken", PageToken(last));
  body += "  </DescribeAutoScalingGroupsResult>\n  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</DescribeAutoScalingGroupsResponse>\n";
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::TerminateInstanceInAutoScalingGroup(const Params& p, WallTime now) {
  const std::string id = p.Get("InstanceId");
  const std::string decrement = p.Get("ShouldDecrementDesiredCapacity");
  if (id.empty() || (decrement != "true" && decrement != "false")) {
    return QueryError(400, "Sender", "ValidationError", "InstanceId and ShouldDecrementDesiredCapacity are required");
  }
  auto it = by_id_.find(id);
  if (it == by_id_.end() || instances_[it->second].info.group.empty()) {
    return QueryError(400, "Sender", "ValidationError", "Instance Id not found - No managed instance found for instance ID: " + id);
  }
  Instance& inst = instances_[it->second];
  auto g = std::find_if(groups_.begin(), groups_.end(), [&](const Group& x) { return x.spec.name == inst.info.group; });
  if (decrement == "true") {
    if (g->spec.desired_capacity - 1 < g->spec.min_size) {
      return QueryError(400, "Sender", "ValidationError",
                        "Currently, desiredSize equals minSize (" + std::to_string(g->spec.min_size) +
                            "). Terminating instance without replacement will violate group's min size constraint. "
                            "Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.");
    }
    --g->spec.desired_capacity;
  }
  Terminate(inst, now);
  ReconcileGroup(*g, now);
  const std::string activity = Uuid();
  std::string body = AsgOpen("TerminateInstanceInAutoScalingGroup") +
                     "  <TerminateInstanceInAutoScalingGroupResult>\n    <Activity>";
  Leaf(body, "ActivityId", activity);
  Leaf(body, "AutoScalingGroupName", g->spec.name);
  Leaf(body, "Description", "Terminating EC2 instance: " + id);
  Leaf(body, "Cause", "At " + FormatRfc3339(now) + " instance " + id + " was taken out of service in response to a user request" +
                          (decrement == "true" ? ", shrinking the capacity from " + std::to_string(g->spec.desired_capacity + 1) +
                                                     " to " + std::to_string(g->spec.desired_capacity) + "."
                                               : "."));
  Leaf(body, "StartTime", FormatRfc3339(now));
  Leaf(body, "StatusCode", "InProgress");
  Leaf(body, "Progress", "0");
  Leaf(body, "Details", "{\"Subnet ID\":\"\",\"Availability Zone\":\"" + inst.info.zone + "\"}");
  body += "</Activity>\n  </TerminateInstanceInAutoScalingGroupResult>\n  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</TerminateInstanceInAutoScalingGroupResponse>\n";
  return {200, "text/xml", {}, body};
}

// ---- SQS (JSON protocol) ------------------------------------------------------

EmulatorResponse CloudEmulator::Sqs(const EmulatorRequest& request, std::string_view op, WallTime now) {
  auto j = nlohmann::json::parse(request.body.empty() ? std::string("{}") : request.body, nullptr, false);
  if (!j.is_object()) return SqsError(400, "InvalidParameterValue", "InvalidParameterValue", "Body is not a JSON object.");
  std::string host = cloud::HeaderValue(request.headers, "Host");
  if (host.empty()) host = "localhost";
  const std::string url = "http://" + host + "/" + scenario_.account_id + "/" + scenario_.queue_name;
  auto ok = [](nlohmann::json body) -> EmulatorResponse {
    return {200, cloud::kSqsJsonContentType, {}, body.dump()};
  };
  auto queue_ok = [&]() {
    const std::string q = j.value("QueueUrl", "");
    const size_t slash = q.rfind('/');
    return slash != std::string::npos && q.substr(slash + 1) == scenario_.queue_name;
  };
  const EmulatorResponse no_queue =
      SqsError(400, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.");
  if (op == "GetQueueUrl") {
    if (j.value("QueueName", "") != scenario_.queue_name) return no_queue;
    return ok({{"QueueUrl", url}});
  }
  if (op == "ReceiveMessage") {
    if (!queue_ok()) return no_queue;
    const int max = j.value("MaxNumberOfMessages", 1);
    if (max < 1 || max > 10) {
      return SqsError(400, "InvalidParameterValue", "InvalidParameterValue",
                      "Value " + std::to_string(max) + " for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.");
    }
    const Seconds visibility(j.value("VisibilityTimeout", static_cast<int>(scenario_.visibility_timeout.count())));
    nlohmann::json messages = nlohmann::json::array();
    for (Message& m : queue_) {
      if (static_cast<int>(messages.size()) == max) break;
      if (m.visible_at > now) continue;
      m.receipt_handle = NewId("AQEB", 16) + NewId("", 16) + NewId("", 16);
      m.visible_at = now + visibility;
      messages.push_back({{"MessageId", m.id},
                          {"ReceiptHandle", m.receipt_handle},
                          {"MD5OfBody", cloud::Md5Hex(m.body)},
                          {"Body", m.body}});
    }
    if (messages.empty()) return ok(nlohmann::json::object());
    return ok({{"Messages", messages}});
  }
  if (op == "DeleteMessage") {
    if (!queue_ok()) return no_queue;
    const std::string handle = j.value("ReceiptHandle", "");
    auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Message& m) { return !handle.empty() && m.receipt_handle == handle; });
    if (it == queue_.end()) {
      return SqsError(400, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
                      "The input receipt handle \"" + handle + "\" is not a valid receipt handle.");
    }
    queue_.erase(it);
    return ok(nlohmann::json::object());
  }
  if (op == "SendMessage") {
    if (!queue_ok()) return no_queue;
    const std::string body = j.value("MessageBody", "");
    if (body.empty()) return SqsError(400, "MissingParameter", "MissingParameter", "The request must contain the parameter MessageBody.");
    Enqueue(body, now);
    return ok({{"MD5OfMessageBody", cloud::Md5Hex(body)}, {"MessageId", queue_.back().id}});
  }
  return SqsError(400, "InvalidAction", "AWS.SimpleQueueService.InvalidAction",
                  "The action " + std::string(op) + " is not valid for this endpoint.");
}

// ---- in-process transport -------------------------------------------------------

Result<cloud::TransportResponse> EmulatorTransport::Send(const cloud::TransportRequest& request) {
  // "http://host:port/path?query" -> host, "/path?query"
  std::string_view url = request.url;
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  const size_t slash = url.find('/');
  const std::string host(url.substr(0, slash));
  EmulatorRequest r;
  r.method = request.method;
  r.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  r.headers = request.headers;
  if (cloud::HeaderValue(r.headers, "Host").empty()) r.headers.insert(r.headers.begin(), {"Host", host});
  r.body = request.body;
  EmulatorResponse resp = emulator_.Handle(r);
  cloud::TransportResponse out;
  out.status = resp.status;
  out.headers = resp.headers;
  out.headers.emplace_back("Content-Type", resp.content_type);
  out.body = std::move(resp.body);
  return out;
}

}  // namespace gpuscaler::sim
