#include "gpuscaler/cloud/aws_provider.h"

#include <algorithm>

#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"

namespace gpuscaler::cloud {
namespace {

// Pages through an EC2 Describe call: sends query(request), parses the answer
// with `parse`, hands each page to `each`, and asks again with the page's
// next token until a page has none.
template <typename Request, typename Page, typename Each>
Status ForEachPage(AwsClient& client, std::string_view action, Request request, QueryParams (*query)(const Request&),
                   Result<Page> (*parse)(std::string_view), Each each) {
  for (int page = 0;; ++page) {
    if (page > 10000) return Error::Internal(std::string(action) + ": too many pages");
    Result<std::string> body = client.Query("ec2", query(request));
    if (!body.ok()) return body.error();
    Result<Page> parsed = parse(*body);
    if (!parsed.ok()) return parsed.error();
    each(*parsed);
    if (parsed->next_token.empty()) return Status::Ok();
    request.next_token = parsed->next_token;
  }
}

// An instance EC2 listed: with the offering it was launched as when this
// provider launched it, else the offering EC2 describes.
Instance ToInstance(const Ec2Instance& e, const std::map<std::string, Offering>& launched, const std::string& region) {
  Instance inst;
  inst.instance_id = e.instance_id;
  auto pool = e.tags.find(kOwnerTag);
  inst.pool = pool == e.tags.end() ? "" : pool->second;
  if (auto known = launched.find(e.instance_id); known != launched.end()) {
    inst.offering = known->second;
  } else {
    inst.offering.instance_type = e.instance_type;
    inst.offering.zone = e.availability_zone;
    inst.offering.region = region;
    inst.offering.capacity_type = e.lifecycle;
  }
  inst.launch_time = e.launch_time;
  inst.state = e.state == "running" ? InstanceState::kRunning
               : e.state == "pending" ? InstanceState::kPending
                                      : InstanceState::kShuttingDown;
  inst.tags = e.tags;
  return inst;
}

}  // namespace

AwsProvider::AwsProvider(AwsProviderOptions options, AwsClient& client, const Clock& clock)
    : options_(std::move(options)), client_(client), clock_(clock) {}

std::string AwsProvider::ClientToken(const std::string& idempotency_token, int run) {
  std::string suffix = std::to_string(run);
  suffix.insert(suffix.begin(), '-');
  const bool ascii = std::all_of(idempotency_token.begin(), idempotency_token.end(),
                                 [](char c) { return c > 32 && c < 127; });
  if (ascii && idempotency_token.size() + suffix.size() <= 64) return idempotency_token + suffix;
  return Sha256Hex(idempotency_token).substr(0, 48) + suffix;
}

Result<LaunchResult> AwsProvider::Launch(const LaunchRequest& request) {
  if (request.count <= 0) return LaunchResult{};
  if (request.offerings.empty()) return Error::InvalidInput("launch: no offerings");
  if (request.idempotency_token.empty()) return Error::InvalidInput("launch: no idempotency token");
  LaunchResult result;
  int remaining = request.count;
  std::map<std::string, std::string> tags = request.tags;
  tags[kOwnerTag] = request.pool;

  size_t begin = 0;
  for (int run = 0; begin < request.offerings.size() && remaining > 0; ++run) {
    size_t end = begin;
    const CapacityType type = request.offerings[begin].capacity_type;
    while (end < request.offerings.size() && request.offerings[end].capacity_type == type) ++end;

    CreateFleetRequest fleet;
    fleet.launch_template = options_.launch_template;
    fleet.total_target_capacity = remaining;
    fleet.default_capacity_type = type;
    const std::string& strategy =
        type == CapacityType::kSpot ? options_.spot_allocation_strategy : options_.on_demand_allocation_strategy;
    (type == CapacityType::kSpot ? fleet.spot_allocation_strategy : fleet.on_demand_allocation_strategy) = strategy;
    const bool prioritized = strategy == "prioritized" || strategy == "capacity-optimized-prioritized";
    for (size_t i = begin; i < end; ++i) {
      const Offering& o = request.offerings[i];
      FleetOverride ov;
      ov.instance_type = o.instance_type;
      if (auto s = options_.subnet_by_zone.find(o.zone); s != options_.subnet_by_zone.end()) {
        ov.subnet_id = s->second;
      } else {
        ov.availability_zone = o.zone;
      }
      if (prioritized) ov.priority = static_cast<double>(i - begin);
      fleet.overrides.push_back(ov);
    }
    fleet.client_token = ClientToken(request.idempotency_token, run);
    fleet.instance_tags = tags;

    auto body = client_.Query("ec2", CreateFleetQuery(fleet));
    auto parsed = body.ok() ? ParseCreateFleet(*body) : Result<CreateFleetResponse>(body.error());
    if (!parsed.ok()) {
      // Nothing launched yet: the whole call failed. Otherwise report the
      // failure against this run's offerings and keep what we have.
      if (result.instances.empty()) return parsed.error();
      for (size_t i = begin; i < end; ++i) result.errors.push_back({request.offerings[i].Key(), parsed.error()});
      break;
    }

    auto offering_for = [&](const FleetOutcomeKey& where) -> const Offering* {
      for (size_t i = begin; i < end; ++i) {
        const Offering& o = request.offerings[i];
        if (o.instance_type != where.instance_type) continue;
        if (!where.availability_zone.empty() && o.zone == where.availability_zone) return &o;
        auto s = options_.subnet_by_zone.find(o.zone);
        if (!where.subnet_id.empty() && s != options_.subnet_by_zone.end() && s->second == where.subnet_id) return &o;
      }
      return nullptr;
    };
    const WallTime now = clock_.WallNow();
    for (const FleetInstances& fi : parsed->instances) {
      const Offering* o = offering_for(fi.where);
      for (const std::string& id : fi.instance_ids) {
        Instance inst;
        inst.instance_id = id;
        inst.pool = request.pool;
        if (o != nullptr) {
          inst.offering = *o;
        } else {
          inst.offering.instance_type = fi.where.instance_type;
          inst.offering.zone = fi.where.availability_zone;
          inst.offering.region = client_.options().region;
        }
        inst.offering.capacity_type = fi.where.lifecycle;
        inst.launch_time = now;
        inst.state = InstanceState::kPending;
        inst.tags = tags;
        launched_[id] = inst.offering;
        result.instances.push_back(std::move(inst));
        --remaining;
      }
    }
    std::optional<Error> fatal;
    for (const FleetError& fe : parsed->errors) {
      const Offering* o = offering_for(fe.where);
      Error e(fe.category, "CreateFleet: " + fe.code + (fe.message.empty() ? "" : ": " + fe.message));
      if (fe.category != ErrorCategory::kCapacity && !fatal) fatal = e;
      result.errors.push_back({o != nullptr ? o->Key() : fe.where.instance_type + "/" + fe.where.availability_zone + "/" +
                                                             std::string(ToString(fe.where.lifecycle)),
                               e});
    }
    if (fatal && result.instances.empty()) return *fatal;
    begin = end;
  }
  return result;
}

Status AwsProvider::Terminate(const std::vector<std::string>& instance_ids) {
  for (size_t begin = 0; begin < instance_ids.size(); begin += 1000) {
    const std::vector<std::string> chunk(instance_ids.begin() + begin,
                                         instance_ids.begin() + std::min(instance_ids.size(), begin + 1000));
    auto body = client_.Query("ec2", TerminateInstancesQuery(chunk));
    if (body.ok()) continue;
    if (body.error().category() != ErrorCategory::kNotFound) return body.error();
    // EC2 terminates none of a batch with an unknown id: one by one, and an
    // id it does not know is already gone.
    for (const std::string& id : chunk) {
      auto one = client_.Query("ec2", TerminateInstancesQuery({id}));
      if (!one.ok() && one.error().category() != ErrorCategory::kNotFound) return one.error();
    }
  }
  return Status::Ok();
}

Result<std::vector<Instance>> AwsProvider::ListInstances() {
  DescribeInstancesRequest req;
  req.filters = {{"tag-key", {kOwnerTag}}, {"instance-state-name", {"pending", "running", "shutting-down"}}};
  req.max_results = 1000;
  std::vector<Instance> out;
  Status listed = ForEachPage(client_, "DescribeInstances", req, DescribeInstancesQuery, ParseDescribeInstances,
                              [&](const DescribeInstancesPage& page) {
                                for (const Ec2Instance& e : page.instances) {
                                  out.push_back(ToInstance(e, launched_, client_.options().region));
                                }
                              });
  if (!listed.ok()) return listed.error();
  std::sort(out.begin(), out.end(), [](const Instance& a, const Instance& b) { return a.instance_id < b.instance_id; });
  return out;
}

Result<std::vector<InterruptionNotice>> AwsProvider::PollInterruptions() {
  std::vector<InterruptionNotice> out;
  if (options_.interruption_queue_url.empty()) return out;
  for (int batch = 0; batch < options_.max_interruption_batches; ++batch) {
    auto body = client_.Json("sqs", "AmazonSQS.ReceiveMessage", ReceiveMessageBody(options_.interruption_queue_url, 10, 0));
    if (!body.ok()) {
      if (!out.empty()) break;  // keep what was read (and already deleted)
      return body.error();
    }
    auto messages = ParseReceiveMessage(*body);
    if (!messages.ok()) return messages.error();
    if (messages->empty()) break;
    for (const SqsMessage& m : *messages) {
      if (!m.md5_of_body.empty() && m.md5_of_body != Md5Hex(m.body)) continue;  // corrupt: leave for redelivery
      auto event = ParseEventBridgeEvent(m.body);
      if (event.ok() && event->kind == Ec2EventKind::kSpotInterruption) {
        const WallTime t = event->time == WallTime{} ? clock_.WallNow() : event->time;
        out.push_back({event->instance_id, t, t + options_.interruption_notice});
      }
      auto deleted = client_.Json("sqs", "AmazonSQS.DeleteMessage",
                                  DeleteMessageBody(options_.interruption_queue_url, m.receipt_handle));
      if (!deleted.ok() && out.empty()) return deleted.error();
    }
  }
  return out;
}

Result<std::vector<SpotPrice>> AwsProvider::SpotPrices(WallTime since) {
  DescribeSpotPriceHistoryRequest req;
  req.instance_types = options_.price_instance_types;
  if (!options_.product_description.empty()) req.product_descriptions = {options_.product_description};
  req.start_time = since;
  req.max_results = 1000;
  std::vector<SpotPrice> out;
  Status listed = ForEachPage(client_, "DescribeSpotPriceHistory", req, DescribeSpotPriceHistoryQuery,
                              ParseDescribeSpotPriceHistory, [&](const SpotPriceHistoryPage& page) {
                                for (const SpotPricePoint& p : page.prices) {
                                  if (p.time < since) continue;  // the price in force at `since`, not a change
                                  out.push_back({p.instance_type, p.availability_zone, CapacityType::kSpot,
                                                 p.usd_per_hour, p.time});
                                }
                              });
  if (!listed.ok()) return listed.error();
  std::sort(out.begin(), out.end(), [](const SpotPrice& a, const SpotPrice& b) {
    return std::tie(a.time, a.instance_type, a.zone) < std::tie(b.time, b.instance_type, b.zone);
  });
  return out;
}

}  // namespace gpuscaler::cloud
