#include "gpuscaler/model/money.h"

#include <cmath>
#include <cstdio>

namespace gpuscaler {
namespace {

std::string Printf(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// `v` with `decimals` decimals; a negative amount that rounds to zero loses
// its sign ("0.00", not "-0.00").
std::string FixedWithoutNegativeZero(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

}  // namespace

double PaidGpuShare(double node_gpus, double total_held) {
  if (node_gpus <= 0) return 0;
  return total_held > node_gpus ? node_gpus / total_held : 1.0;
}

NodePriceSplit SplitNodePrice(double node_price, double node_gpus, std::span<const GpuHolding> holdings) {
  NodePriceSplit split;
  split.paid_gpus.assign(holdings.size(), 0.0);
  split.usd.assign(holdings.size(), 0.0);
  if (node_gpus <= 0) {
    split.idle_usd = node_price;
    return split;
  }
  double total_held = 0;
  for (const GpuHolding& h : holdings) {
    if (h.gpus > 0) total_held += h.gpus;
  }
  const double share = PaidGpuShare(node_gpus, total_held);
  const double per_gpu = PricePerGpu(node_price, node_gpus);
  for (size_t i = 0; i < holdings.size(); ++i) {
    const GpuHolding& h = holdings[i];
    if (h.gpus <= 0) continue;
    // held × 1.0 is held exactly: a node that is not oversubscribed charges
    // held × per_gpu to the last bit, as the callers always have.
    const double paid = h.gpus * share;
    const double usd = paid * per_gpu;
    split.paid_gpus[i] = paid;
    split.usd[i] = usd;
    split.usd_by_class[std::string(h.workload_class)] += usd;
    if (!h.team.empty()) split.usd_by_team[std::string(h.team)] += usd;
  }
  // Not oversubscribed: each holding paid for what it held, so the GPUs
  // paid for add up to total_held.
  if (total_held < node_gpus) {
    split.idle_gpus = node_gpus - total_held;
    split.idle_usd = node_price * split.idle_gpus / node_gpus;
  }
  return split;
}

std::string FormatUsd(double usd, MoneyStyle style) {
  if (!std::isfinite(usd)) return "–";
  switch (style) {
    case MoneyStyle::kCents:
      return Printf("$%.2f", usd);
    case MoneyStyle::kCentsPerHour:
      return Printf("$%.2f/h", usd);
    case MoneyStyle::kFourDecimals:
      return Printf("$%.4f", usd);
    case MoneyStyle::kRatePerHour: {
      const double magnitude = std::fabs(usd);
      return Printf(magnitude > 0 && magnitude < 0.1 ? "$%.4f/h" : "$%.2f/h", usd);
    }
    case MoneyStyle::kCompact: {
      const double magnitude = std::fabs(usd);
      if (magnitude >= 1e6) return "$" + FixedWithoutNegativeZero(usd / 1e6, 1) + "M";
      if (magnitude >= 1e4) return "$" + FixedWithoutNegativeZero(usd / 1e3, 1) + "k";
      if (magnitude >= 100) return "$" + FixedWithoutNegativeZero(usd, 0);
      return "$" + FixedWithoutNegativeZero(usd, 2);
    }
    case MoneyStyle::kAxisTick:
      return Printf(usd < 10 ? "$%.1f" : "$%.0f", usd);
    case MoneyStyle::kBareCents:
      return Printf("%.2f", usd);
  }
  return Printf("$%.2f", usd);
}

}  // namespace gpuscaler
