#include "gpuscaler/cloud/aws_provider.h"

#include <algorithm>
#include <optional>

#include "aws_provider_impl.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"

namespace gpuscaler::cloud {

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
  // What EC2 says the instance runs in wins: an instance in a reservation
  // holds one of its slots, whatever it was launched as (an on-demand
  // launch that landed in an open reservation, or one listed after a
  // restart).
  if (!e.capacity_reservation_id.empty()) {
    inst.offering.capacity_type = CapacityType::kReserved;
    inst.offering.reservation_id = e.capacity_reservation_id;
  }
  inst.launch_time = e.launch_time;
  inst.state = e.state == "running"                            ? InstanceState::kRunning
               : e.state == "pending"                          ? InstanceState::kPending
               : e.state == "stopping" || e.state == "stopped" ? InstanceState::kStopped
                                                               : InstanceState::kShuttingDown;
  inst.tags = e.tags;
  inst.placement_group = e.placement_group;
  return inst;
}

AwsProvider::AwsProvider(AwsProviderOptions options, AwsClient& client, const Clock& clock)
    : options_(std::move(options)), client_(client), clock_(clock) {}

std::string AwsProvider::ClientToken(const std::string& idempotency_token, int run) {
  constexpr size_t kMaxLength = 64;  // EC2's limit
  constexpr size_t kHashDigits = 32;
  std::string suffix = std::to_string(run);
  suffix.insert(suffix.begin(), '-');  // not "-" + …: GCC 12 warns falsely (-Wrestrict)
  auto printable = [](char c) { return c > 32 && c < 127; };
  const std::string& t = idempotency_token;
  if (std::all_of(t.begin(), t.end(), printable) && t.size() + suffix.size() <= kMaxLength) return t + suffix;
  // The hash covers the whole token, so tokens sharing the readable head
  // (one cluster and installation) still differ.
  const size_t head_max = kMaxLength - suffix.size() - 1 - kHashDigits;
  size_t head = 0;
  while (head < t.size() && head < head_max && printable(t[head])) ++head;
  const std::string hash = Sha256Hex(t).substr(0, kHashDigits);
  return (head == 0 ? hash : t.substr(0, head) + "-" + hash) + suffix;
}

Result<LaunchResult> AwsProvider::Launch(const LaunchRequest& request) {
  if (request.count <= 0) return LaunchResult{};
  if (request.offerings.empty()) return Error::InvalidInput("launch: no offerings");
  if (request.idempotency_token.empty()) return Error::InvalidInput("launch: no idempotency token");
  if (!request.auto_scaling_group.empty()) {
    for (const Offering& o : request.offerings) {
      if (o.capacity_type != CapacityType::kReserved) continue;
      // A group launches as its own CapacityReservationSpecification says;
      // a launch cannot aim one raise of it at one reservation.
      return Error::Config("pool '" + request.pool + "': actuation asg cannot launch into reservation " +
                           o.reservation_id +
                           " (remove pools[].reservations, or set the reservation on auto "
                           "scaling group '" +
                           request.auto_scaling_group + "' itself)");
    }
  }
  return request.auto_scaling_group.empty() ? LaunchFleet(request) : LaunchInGroup(request);
}

Result<LaunchResult> AwsProvider::LaunchFleet(const LaunchRequest& request) {
  LaunchTemplateRef launch_template = options_.launch_template;
  const std::map<std::string, std::string>* subnet_by_zone = &options_.subnet_by_zone;
  if (request.node_template) {
    Result<const std::map<std::string, std::string>*> own_subnets = PoolSubnets(request.pool, *request.node_template);
    if (!own_subnets.ok()) return own_subnets.error();
    if (*own_subnets != nullptr) {
      subnet_by_zone = *own_subnets;
      // Its subnets are the pool's whole network: a zone without one is
      // not launched into (checked before anything is created).
      for (const Offering& o : request.offerings) {
        if (subnet_by_zone->count(o.zone) == 0)
          return Error::Config("pool '" + request.pool + "': node_template.subnets: no subnet in zone " + o.zone);
      }
    }
    Result<LaunchTemplateRef> own = EnsureLaunchTemplate(request);
    if (!own.ok()) return own.error();
    launch_template = *own;
  } else if (launch_template.id.empty() && launch_template.name.empty()) {
    return Error::Config("pool '" + request.pool +
                         "': no launch template (give the pool a node_template, or configure cloud.launch_template)");
  }
  if (!request.placement_group.empty()) {
    if (Status s = EnsurePlacementGroup(request.pool, request.placement_group); !s.ok()) return s.error();
  }
  LaunchResult result;
  int remaining = request.count;
  std::map<std::string, std::string> tags = request.tags;
  tags[kOwnerTag] = request.pool;
  tags[kClusterTag] = options_.cluster_name;

  size_t begin = 0;
  for (int run = 0; begin < request.offerings.size() && remaining > 0; ++run) {
    size_t end = begin;
    const CapacityType type = request.offerings[begin].capacity_type;
    while (end < request.offerings.size() && request.offerings[end].capacity_type == type) ++end;
    // Spot warm capacity: EC2 Fleet's instant type takes no persistent Spot
    // request, the only kind that can be stopped.
    const bool stoppable_spot = type == CapacityType::kSpot && TagOf(tags, kStopOnInterruptionTag) == "stop";
    if (type == CapacityType::kReserved || stoppable_spot) {
      // One reservation, or one spot offering, per call: a run of one offering.
      end = begin + 1;
      Status s =
          stoppable_spot
              ? LaunchStoppableSpot(request, begin, run, launch_template, *subnet_by_zone, tags, &remaining, &result)
              : LaunchReserved(request, begin, run, launch_template, *subnet_by_zone, tags, &remaining, &result);
      if (!s.ok()) {
        // As a fleet run's failure: the whole call, or this offering's
        // error and what was launched before it.
        if (result.instances.empty()) return s.error();
        result.errors.push_back({request.offerings[begin].Key(), s.error()});
        break;
      }
      begin = end;
      continue;
    }

    CreateFleetRequest fleet;
    fleet.launch_template = launch_template;
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
      if (auto s = subnet_by_zone->find(o.zone); s != subnet_by_zone->end()) {
        ov.subnet_id = s->second;
      } else {
        ov.availability_zone = o.zone;
      }
      if (prioritized) ov.priority = static_cast<double>(i - begin);
      ov.placement_group = request.placement_group;
      fleet.overrides.push_back(ov);
    }
    // A gang's nodes: all that are left, in one zone, or none from this run.
    if (request.all_or_nothing) fleet.min_target_capacity = remaining;
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
        auto s = subnet_by_zone->find(o.zone);
        if (!where.subnet_id.empty() && s != subnet_by_zone->end() && s->second == where.subnet_id) return &o;
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
        inst.placement_group = request.placement_group;
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
      result.errors.push_back(
          {o != nullptr ? o->Key() : OfferingKey(fe.where.instance_type, fe.where.availability_zone, fe.where.lifecycle),
           e});
    }
    if (fatal && result.instances.empty()) return *fatal;
    begin = end;
  }
  return result;
}

Result<std::vector<InterruptionNotice>> AwsProvider::PollInterruptions() {
  std::vector<InterruptionNotice> out;
  if (options_.interruption_queue_url.empty()) return out;
  for (int batch = 0; batch < options_.max_interruption_batches; ++batch) {
    auto body = client_.Json("sqs", "AmazonSQS.ReceiveMessage", ReceiveMessageBody(options_.interruption_queue_url, 10, 0));
    auto messages = body.ok() ? ParseReceiveMessage(*body) : Result<std::vector<SqsMessage>>(body.error());
    if (!messages.ok()) {
      // What was read stays on the queue until acknowledged: nothing is lost
      // by stopping here, and the failed receive's messages come again.
      if (!out.empty()) break;
      return messages.error();
    }
    if (messages->empty()) break;
    for (const SqsMessage& m : *messages) {
      if (!m.md5_of_body.empty() && m.md5_of_body != Md5Hex(m.body)) continue;  // corrupt: leave for redelivery
      auto event = ParseEventBridgeEvent(m.body);
      if (event.ok() && (event->kind == Ec2EventKind::kSpotInterruption ||
                         event->kind == Ec2EventKind::kRebalanceRecommendation)) {
        const WallTime t = event->time == WallTime{} ? clock_.WallNow() : event->time;
        const bool rebalance = event->kind == Ec2EventKind::kRebalanceRecommendation;
        out.push_back({event->instance_id, t, rebalance ? WallTime{} : t + options_.interruption_notice, rebalance,
                       m.receipt_handle});
        continue;
      }
      // Not a notice: nothing to record, so nothing to keep.
      auto deleted = client_.Json("sqs", "AmazonSQS.DeleteMessage",
                                  DeleteMessageBody(options_.interruption_queue_url, m.receipt_handle));
      if (!deleted.ok() && out.empty()) return deleted.error();
    }
  }
  return out;
}

Status AwsProvider::AcknowledgeInterruptions(const std::vector<InterruptionNotice>& notices) {
  std::optional<Error> first_error;
  for (const InterruptionNotice& n : notices) {
    if (n.receipt.empty()) continue;
    auto deleted =
        client_.Json("sqs", "AmazonSQS.DeleteMessage", DeleteMessageBody(options_.interruption_queue_url, n.receipt));
    if (!deleted.ok() && !first_error) first_error = deleted.error().WithContext("acknowledging " + n.instance_id);
  }
  if (first_error) return *first_error;
  return Status::Ok();
}

Result<std::vector<SpotPrice>> AwsProvider::SpotPrices(WallTime since) {
  DescribeSpotPriceHistoryRequest req;
  req.instance_types = options_.price_instance_types;
  if (!options_.product_description.empty()) req.product_descriptions = {options_.product_description};
  req.start_time = since;
  req.max_results = 1000;
  std::vector<SpotPrice> out;
  Status listed = ForEachPage(client_, "ec2", "DescribeSpotPriceHistory", req, DescribeSpotPriceHistoryQuery,
                              ParseDescribeSpotPriceHistory, [&](const SpotPriceHistoryPage& page) {
                                // EC2 answers a start time with the changes after
                                // it and, per offering, the last change before it:
                                // the price in force, which is kept too.
                                for (const SpotPricePoint& p : page.prices) {
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
