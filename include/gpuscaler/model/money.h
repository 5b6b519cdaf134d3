// Money: the one rule that splits a node's price over the work on it, and
// the one way an amount of dollars is printed. Every part that charges a
// team or a class for a node (the planner's team budgets, the actuator's
// budget guard, the usage meter's month to date, the dashboard and the cost
// reports) goes through SplitNodePrice or its factor PaidGpuShare, so that a
// team is charged the same for the same node wherever it is looked at.
// Pure functions; thread-safe.
//
// The rule. A node's price (for any period: an hourly rate, or what the node
// cost over an interval; the charges come out in the same unit) is split by
// GPUs. Each holding (a unit, or the GPUs a (class, team) held) pays for
//
//   paid = held × node_gpus / max(node_gpus, total_held)
//
// of the node's GPUs, at the node's per-GPU rate price / node_gpus; the GPUs
// nobody holds are idle. So
//
//   charge = price × held / max(node_gpus, total_held)
//   idle   = price × max(0, node_gpus − total_held) / node_gpus
//
// and for every node the charges plus idle add up to the price (up to
// floating-point rounding). A node whose holdings hold more GPUs than it has
// (oversubscribed) is paid for by its holdings in proportion to what each
// holds, and nothing of it is idle: no team pays for GPUs another team pays
// for too. On a node that is not oversubscribed each holding pays
// held × price / node_gpus, whatever the others hold.
//
// Edge cases:
// - node_gpus <= 0 (a node without GPUs, or of a type not in the catalog):
//   there is no GPU to split, so every holding pays 0 and the whole price is
//   idle.
// - a holding of <= 0 GPUs (CPU-only work) pays 0 and adds nothing to
//   total_held.
// - no holdings: the whole price is idle.
// GPUs may be whole or fractional, and in any unit as long as node_gpus and
// the holdings share it (GPUs for a snapshot, GPU-seconds for usage rows).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscaler {

// The price one GPU of a node pays: node_price / node_gpus; 0 when
// node_gpus <= 0. What a holding pays per GPU held on a node that is not
// oversubscribed, hence what a placement the planner makes (which never
// oversubscribes a node) is charged per GPU.
inline double PricePerGpu(double node_price, double node_gpus) { return node_gpus > 0 ? node_price / node_gpus : 0; }

// The factor from GPUs held to GPUs paid for on a node whose holdings hold
// `total_held` GPUs between them: exactly 1 when total_held <= node_gpus,
// node_gpus / total_held when more (oversubscribed), 0 when node_gpus <= 0.
// For a caller that prices the paid GPUs itself (the cost reports price them
// slice by slice of the node's price history).
double PaidGpuShare(double node_gpus, double total_held);

// What one holding holds on a node. The views must outlive the call only.
struct GpuHolding {
  std::string_view workload_class;
  std::string_view team;  // "": no team
  double gpus = 0;        // held; <= 0: none
};

// A node's price split by the rule above.
struct NodePriceSplit {
  // Per holding, in the order given: the GPUs it pays for and its charge.
  std::vector<double> paid_gpus;
  std::vector<double> usd;
  // The charges added up by class and by team (holdings of no team are in
  // no team's sum), for holdings that hold GPUs.
  std::map<std::string, double, std::less<>> usd_by_class;
  std::map<std::string, double, std::less<>> usd_by_team;
  // The GPUs nobody pays for and what they cost: the whole price on a node
  // without GPUs.
  double idle_gpus = 0;
  double idle_usd = 0;
};

// Splits `node_price` of a node with `node_gpus` GPUs over `holdings`.
// Each charge is paid_gpus × PricePerGpu(node_price, node_gpus); idle is
// node_price × idle_gpus / node_gpus.
NodePriceSplit SplitNodePrice(double node_price, double node_gpus, std::span<const GpuHolding> holdings);

// How an amount of dollars is printed. Each style is what one kind of text
// has always printed, so that moving a caller here changes no output.
enum class MoneyStyle {
  kCents,         // "$12.34", "$-1.50": two decimals, as printf's %.2f
  kCentsPerHour,  // "$12.34/h": a rate with two decimals
  kFourDecimals,  // "$0.0123": an expected cost of a few cents, as printf's %.4f
  // "$12.34/h", and four decimals below ten cents an hour ("$0.0420/h"), so
  // a small rate does not print as "$0.00/h".
  kRatePerHour,
  // A figure on a chart or a summary card: "$1.2M", "$12.3k", "$123",
  // "$1.23" (by magnitude); a negative amount that rounds to zero prints
  // without its sign.
  kCompact,
  // A chart's axis tick: "$2.5" below ten dollars, "$15", "$1200" from ten
  // (one decimal, then none), as the sim merge page's cost axis.
  kAxisTick,
  // "12.34": two decimals without the sign, for a cell under a heading that
  // names the currency ("total cost (USD)"), as the simulator's summary.
  kBareCents,
};

// `usd` in `style`. A non-finite amount (no figure) prints "–" (an en dash)
// in every style.
std::string FormatUsd(double usd, MoneyStyle style);

}  // namespace gpuscaler
