// A Snapshot is the planner's whole input besides the policy: an immutable
// picture of demand, nodes and what can be bought, at one instant. Built by
// the controller from signals (daemon) or from a trace (simulator); written
// and read as JSON (docs/snapshot.md) so a decision can be replayed exactly.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/gpu.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/reservation.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// One point of a demand forecast's distribution: the class's peak demand
// within the horizon is at most `gpus` with probability `quantile`.
struct ForecastLevel {
  double quantile = 0;
  double gpus = 0;
};

// A workload class's demand forecast (classes[].forecast), made by the
// controller from the class's own demand history (controller/forecast.h):
// the planner's input for launching capacity ahead (solver/forecast_demand.h).
struct DemandForecast {
  std::string workload_class;
  // The class's demand when the forecast was made: GPUs of its pending and
  // running work.
  double demand_gpus = 0;
  // How far ahead the forecast looks, and how long a new node of the class's
  // cheapest suitable family takes from launch to GPUs allocatable (what
  // work waits when nothing was launched ahead).
  Seconds horizon{0};
  Seconds lead_time{0};
  // Peak demand within the horizon by quantile, quantiles ascending; empty
  // when there is no forecast (then `fallback` says why, and the class is
  // planned reactively).
  std::vector<ForecastLevel> levels;
  std::string fallback;
};

// A node of a pool's warm capacity (pools[].warm): stopped, or launched to
// be stopped (a refill on its way). Not in Snapshot::nodes: it takes no work
// until woken. Always on-demand.
struct WarmNode {
  std::string instance_id;
  std::string pool;
  Offering offering;  // what it is; usd_per_hour is its price once woken
  // False while a refill boots (it is stopped once its node is Ready): it
  // counts toward the pool's warm size but cannot be woken yet.
  bool stopped = true;
  WallTime since{};  // stopped at, or launched at while filling
  // What it costs while it waits: its volumes (USD per hour).
  double waiting_usd_per_hour = 0;
};

struct Snapshot {
  WallTime time{};
  std::vector<GpuModel> gpu_models;
  std::vector<InstanceType> instance_types;
  std::vector<Offering> offerings;
  // The reservations the policy's pools select (pools[].reservations), as
  // the cloud last described them; each open one has a reserved offering
  // in `offerings` (Offering::reservation_id).
  std::vector<Reservation> reservations;
  std::vector<Node> nodes;
  std::vector<DemandUnit> pending;
  // Classes whose signals are missing or stale this tick: the planner must not
  // remove capacity that serves them (fail static).
  std::vector<std::string> scale_down_blocked_classes;
  // Spend already committed this calendar month (for monthly budget caps):
  // the whole fleet's, and each node pool's (a pool's cap is charged with
  // its own spend only).
  double month_to_date_usd = 0;
  std::map<std::string, double> month_to_date_usd_by_pool;
  // Each team's share of this month's spend (the cost report's attribution:
  // node price x the team's share of the node's GPUs), for budget.teams caps.
  std::map<std::string, double> month_to_date_usd_by_team;
  // Hours left in the month at `time` (for monthly budget caps).
  double hours_left_in_month = 0;
  // Per node pool: nodes disrupted (removed by a plan: emptied or
  // consolidated) within the policy's disruption_interval before `time`.
  std::map<std::string, int> recently_disrupted;
  // Workload classes kept off spot until the policy's spot.fallback_duration
  // has passed since a spot capacity error for their work: the planner
  // places them on on-demand only.
  std::vector<std::string> spot_paused_classes;
  // Workload classes whose estimated recent lost work is above their
  // max_lost_work_share of their GPU-hours (the controller's lost-work
  // budget): the planner gives them no new spot work (new nodes, free room
  // of spot nodes, consolidation moves); what runs on spot stays.
  std::vector<std::string> spot_budget_spent_classes;
  // Per workload class with a spot_share_window: the GPUs it held on
  // on-demand above its floor (1 - max_spot_share of its GPUs) on average
  // over that window; negative when it held less. While it is positive the
  // planner holds the moment's floor one unit of the class lower, while it
  // is negative one unit higher (ClusterState, floor held on average).
  std::map<std::string, double> spot_floor_credit_gpus;
  // Spot offerings (Offering::Key) whose pool lost nodes in a reclaim wave
  // and is in its cooldown (OfferingAvailability): the planner places no new
  // spot node in them, whatever their `available` says.
  std::vector<std::string> reclaimed_spot_pools;
  // Per instance family: the warm-up learned from the nodes this controller
  // launched (launch to GPUs allocatable, seconds). A family not listed
  // warms up in its offerings' launch_latency (the catalog's). A
  // replacement pays for the new node and the old one together this long.
  std::map<std::string, int> warmup_seconds_by_family;
  // Why the offerings' spot prices cannot be trusted (the cloud's price
  // source has not answered since the controller started, so the catalog's
  // estimates stand, or not within signals.max_staleness.prices); empty when
  // they are live. While set, the planner buys no node to take a running
  // node's work (no replacement, no switch of running work between spot and
  // on-demand) and says so in the plan's notes.
  std::string stale_prices;
  // Demand forecasts of the classes with classes[].forecast.
  std::vector<DemandForecast> forecasts;
  // The warm capacity of pools with pools[].warm, in a stable order (pool,
  // then instance id), and what volumes cost (the catalog's): a stopped node
  // costs its volumes only, `default_volume_gib` of them where its pool's
  // node template names none.
  std::vector<WarmNode> warm_nodes;
  double volume_usd_per_gib_hour = 0.08 / 730;
  int default_volume_gib = 100;
};

// GPUs of node `n`'s instance type in `s`'s catalog; 0 when it is not listed.
int GpusOf(const Snapshot& s, const Node& n);

// The snapshot's nodes (launching ones too), those on spot, and their GPUs.
struct FleetCounts {
  int nodes = 0;
  int spot_nodes = 0;
  int gpus = 0;
};
FleetCounts CountFleet(const Snapshot& s);

}  // namespace gpuscaler
