// AwsProvider's reserved capacity: listing the account's capacity
// reservations, and launching into one.
#include <algorithm>

#include "aws_provider_impl.h"
#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/capacity_reservation_api.h"

namespace gpuscaler::cloud {
namespace {

// EC2 has no "expiring" state: a reservation is active until its end date,
// then expired. Those that take launches now (active) or will: scheduled (a
// Capacity Block or future-dated ODCR before its start) and pending (being
// provisioned; EC2 may take launches into it already).
const std::vector<std::string>& UsableStates() {
  static const std::vector<std::string> kStates = {"active", "pending", "scheduled"};
  return kStates;
}

}  // namespace

Result<std::vector<Reservation>> AwsProvider::ListReservations() {
  DescribeCapacityReservationsRequest req;
  req.filters = {{"state", UsableStates()}};
  req.max_results = 1000;
  std::vector<Reservation> out;
  Status listed =
      ForEachPage(client_, "ec2", "DescribeCapacityReservations", req, DescribeCapacityReservationsQuery,
                  ParseDescribeCapacityReservations, [&](const CapacityReservationsPage& page) {
                    for (const CapacityReservationInfo& c : page.reservations) {
                      const std::vector<std::string>& usable = UsableStates();
                      if (std::find(usable.begin(), usable.end(), c.state) == usable.end()) continue;
                      // Old answers have no reservationType: those are ODCRs. A type
                      // this provider does not know how to launch into is left out.
                      const std::optional<ReservationKind> kind =
                          c.reservation_type.empty() ? ReservationKind::kDefault
                                                     : ParseReservationKind(c.reservation_type);
                      if (!kind) continue;
                      Reservation r;
                      r.id = c.id;
                      r.instance_type = c.instance_type;
                      r.region = client_.options().region;
                      r.zone = c.availability_zone;
                      r.kind = *kind;
                      r.total_count = c.total_instance_count;
                      r.available_count = std::clamp(c.available_instance_count, 0, c.total_instance_count);
                      r.start = c.start_date;
                      r.end = c.end_date;
                      r.tags = c.tags;
                      // The API states no price: an ODCR is billed at the on-demand
                      // rate, which the controller takes from its catalog when this is
                      // 0; a Capacity Block's fee is not in this API either.
                      r.usd_per_hour = 0;
                      reservation_kinds_[r.id] = r.kind;
                      out.push_back(std::move(r));
                    }
                  });
  if (!listed.ok()) return listed.error().WithContext("capacity reservations");
  std::sort(out.begin(), out.end(), [](const Reservation& a, const Reservation& b) { return a.id < b.id; });
  return out;
}

Result<ReservationKind> AwsProvider::ReservationKindOf(const std::string& id) {
  if (auto known = reservation_kinds_.find(id); known != reservation_kinds_.end()) return known->second;
  DescribeCapacityReservationsRequest req;
  req.ids = {id};
  Result<std::string> body = client_.Query("ec2", DescribeCapacityReservationsQuery(req));
  if (!body.ok()) return body.error();
  Result<CapacityReservationsPage> page = ParseDescribeCapacityReservations(*body);
  if (!page.ok()) return page.error();
  for (const CapacityReservationInfo& c : page->reservations) {
    if (c.id != id) continue;
    const std::optional<ReservationKind> kind =
        c.reservation_type.empty() ? ReservationKind::kDefault : ParseReservationKind(c.reservation_type);
    if (!kind)
      return Error::Config("capacity reservation " + id + " has reservation type '" + c.reservation_type +
                           "'");
    reservation_kinds_[id] = *kind;
    return *kind;
  }
  return Error::NotFound("capacity reservation " + id + " not found");
}

Status AwsProvider::LaunchReserved(const LaunchRequest& request, size_t index, int run,
                                   const LaunchTemplateRef& launch_template,
                                   const std::map<std::string, std::string>& subnet_by_zone,
                                   const std::map<std::string, std::string>& tags, int* remaining,
                                   LaunchResult* result) {
  const Offering& o = request.offerings[index];
  // A reservation that is full, not open (before its start, a block in its
  // last half hour) or gone is a shortage of this offering: the launch
  // moves on to the next one. Anything else fails the call.
  auto failed = [&](const Error& e) -> Status {
    const ErrorCategory c = e.category();
    if (c == ErrorCategory::kCapacity || c == ErrorCategory::kNotFound) {
      result->errors.push_back(
          {o.Key(),
           Error(ErrorCategory::kCapacity, "RunInstances into " + o.reservation_id + ": " + e.message())});
      return Status::Ok();
    }
    return e.WithContext("RunInstances into " + o.reservation_id);
  };
  if (o.reservation_id.empty()) return failed(Error::Config("a reserved offering without a reservation id"));
  Result<ReservationKind> kind = ReservationKindOf(o.reservation_id);
  if (!kind.ok()) return failed(kind.error());

  RunInstancesRequest run_request =
      OfferingRunRequest(request, index, run, launch_template, subnet_by_zone, tags, *remaining);
  run_request.capacity_reservation_preference = kReservationsOnly;
  run_request.capacity_reservation_id = o.reservation_id;
  if (*kind == ReservationKind::kCapacityBlock) run_request.market_type = kCapacityBlockMarket;

  Result<std::string> body = client_.Query("ec2", RunInstancesQuery(run_request));
  Result<std::vector<Ec2Instance>> launched =
      body.ok() ? ParseRunInstances(*body) : Result<std::vector<Ec2Instance>>(body.error());
  if (!launched.ok()) return failed(launched.error());
  TakeOfferingRun(*launched, request, index, tags, "RunInstances into " + o.reservation_id, remaining, result);
  return Status::Ok();
}

RunInstancesRequest AwsProvider::OfferingRunRequest(const LaunchRequest& request, size_t index, int run,
                                                    const LaunchTemplateRef& launch_template,
                                                    const std::map<std::string, std::string>& subnet_by_zone,
                                                    const std::map<std::string, std::string>& tags,
                                                    int remaining) const {
  const Offering& o = request.offerings[index];
  RunInstancesRequest run_request;
  run_request.launch_template = launch_template;
  run_request.instance_type = o.instance_type;
  if (auto s = subnet_by_zone.find(o.zone); s != subnet_by_zone.end()) {
    run_request.subnet_id = s->second;
  } else {
    run_request.availability_zone = o.zone;
  }
  run_request.placement_group = request.placement_group;
  run_request.max_count = remaining;
  // A gang's nodes: all that are left, or none from this offering.
  run_request.min_count = request.all_or_nothing ? remaining : 1;
  run_request.client_token = ClientToken(request.idempotency_token, run);
  run_request.instance_tags = tags;
  return run_request;
}

void AwsProvider::TakeOfferingRun(const std::vector<Ec2Instance>& launched, const LaunchRequest& request,
                                  size_t index, const std::map<std::string, std::string>& tags,
                                  const std::string& what, int* remaining, LaunchResult* result) {
  const Offering& o = request.offerings[index];
  const WallTime now = clock_.WallNow();
  for (const Ec2Instance& e : launched) {
    Instance inst;
    inst.instance_id = e.instance_id;
    inst.pool = request.pool;
    inst.offering = o;
    inst.launch_time = now;
    inst.state = InstanceState::kPending;
    inst.tags = tags;
    inst.placement_group = request.placement_group;
    launched_[e.instance_id] = o;
    result->instances.push_back(std::move(inst));
  }
  const int got = static_cast<int>(launched.size());
  if (got < *remaining) {
    result->errors.push_back({o.Key(), Error(ErrorCategory::kCapacity, what + ": room for " + std::to_string(got) +
                                                                         " of " + std::to_string(*remaining))});
  }
  *remaining -= std::min(got, *remaining);
}

}  // namespace gpuscaler::cloud
