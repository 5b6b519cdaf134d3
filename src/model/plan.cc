#include "gpuscaler/model/plan.h"

namespace gpuscaler {

TerminationAction TerminationOf(const Node& node, TerminationKind kind) {
  TerminationAction t;
  t.node_id = node.id;
  t.instance_id = node.instance_id;
  t.pool = node.pool;
  t.offering = node.offering;
  t.kind = kind;
  return t;
}

std::string_view ToString(UnplacedReason r) {
  switch (r) {
    case UnplacedReason::kNoOfferingFits: return "no-offering-fits";
    case UnplacedReason::kBudget: return "budget";
    case UnplacedReason::kPoolMax: return "pool-max";
    case UnplacedReason::kCapacityUnavailable: return "capacity-unavailable";
    case UnplacedReason::kSpotShare: return "spot-share";
    case UnplacedReason::kZoneSpread: return "zone-spread";
    case UnplacedReason::kMaxNodesPerTick: return "max-nodes-per-tick";
    case UnplacedReason::kSpotPriceCeiling: return "spot-price-ceiling";
    case UnplacedReason::kNoPool: return "no-pool";
    case UnplacedReason::kDeadlineHold: return "deadline-hold";
    case UnplacedReason::kGangIncomplete: return "gang-incomplete";
  }
  return "unknown";
}

std::string_view ToString(TerminationKind k) {
  switch (k) {
    case TerminationKind::kEmpty: return "empty";
    case TerminationKind::kConsolidate: return "consolidate";
    case TerminationKind::kReplace: return "replace";
  }
  return "unknown";
}

}  // namespace gpuscaler
