// The fleet inventory: which nodes the cluster state knows (listed
// instances, nodes the actuator reported, launch placeholders), what it
// knows of each beyond the Node itself (NodeRecord), the index by id, and
// the bookkeeping of the instance list: instances ended by our hand that
// may still be listed, drains under way, nodes protected from removal, when
// the list was last read.
//
// The nodes themselves are the snapshot's (Snapshot::nodes, passed in):
// the records are kept parallel to them, so every node is added and
// removed through the inventory.
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuscaler/model/node.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// What the cluster state knows of a node beyond the Node itself.
struct NodeRecord {
  int offering = -1;  // index in the offering book (-1: not in the catalog)
  std::optional<WallTime> notice_deadline;
  uint64_t running_version = ~uint64_t{0};
  // Placeholders of an in-flight launch only.
  std::string awaited_token;
  WallTime give_up_at{};
  int64_t decision_id = 0;
  std::string reason;
  bool placeholder() const { return !awaited_token.empty(); }
  // With ClusterNodes: a Ready node with GPUs allocatable was seen for it.
  bool registered = false;
  bool node_seen = false;      // a Kubernetes node names it
  bool first_pod = false;      // work has run on it
  bool launched_here = false;  // by this process: its milestones are measured
  // Found at a restart as a young node not yet Ready with GPUs: still
  // under the registration timeout.
  bool joining_at_start = false;
  std::string family;
  // Why the node is to be replaced and removed (registration timeout,
  // NotReady too long, rebalance replaced); empty: it is not.
  std::string repair;
  // spot.on_rebalance "replace", or a Capacity Block node being retired:
  // its work is replacement demand until the replacement has come, then it
  // is removed (a retired block node by `remove_by` at the latest, come
  // what may: the cloud takes it back soon after).
  bool rebalance_replace = false;
  WallTime rebalanced_at{};
  std::optional<WallTime> remove_by;
  std::string retire_reason;  // why it is retired ("" for a rebalance)
  // Its running work is replacement demand (a notice, a repair, a
  // rebalance replacement, a retirement).
  bool work_is_replacement_demand() const { return notice_deadline || !repair.empty() || rebalance_replace; }
};

class FleetInventory {
 public:
  // The index of the node with instance id (a placeholder: node id) `id`.
  std::optional<size_t> Find(const std::string& id) const;
  bool Has(const std::string& id) const { return index_.count(id) != 0; }
  NodeRecord& record(size_t index) { return records_[index]; }
  const NodeRecord& record(size_t index) const { return records_[index]; }

  void Add(std::vector<Node>& nodes, Node node, NodeRecord record);
  void Remove(std::vector<Node>& nodes, size_t index);
  // The placeholder at `index` becomes the listed node `node`.
  void Claim(std::vector<Node>& nodes, size_t index, Node node, NodeRecord record);
  size_t placeholders() const { return placeholders_; }
  // `nodes` without the placeholders: what is paid for.
  const std::vector<Node>& Billed(const std::vector<Node>& nodes);

  // Instances ended by our hand: ignored while still listed.
  void MarkEnded(const std::string& instance_id) { ended_.insert(instance_id); }
  bool Ended(const std::string& instance_id) const { return !ended_.empty() && ended_.count(instance_id) != 0; }
  // After a listing: only those still listed are kept.
  void KeepEnded(std::set<std::string> still_listed) { ended_.swap(still_listed); }

  // Instances the store had recorded running before a restart: until the
  // first listing, they are not awaited instances arriving.
  void NoteRecordedBeforeStart(const std::string& instance_id) { recorded_before_start_.insert(instance_id); }
  bool RecordedBeforeStart(const std::string& instance_id) const { return recorded_before_start_.count(instance_id) != 0; }
  void ForgetRecordedBeforeStart() { recorded_before_start_.clear(); }

  // A drain is under way: the node takes no new work.
  void SetDraining(const std::string& instance_id, bool draining);
  bool Draining(const std::string& instance_id) const { return draining_.count(instance_id) != 0; }

  // Protected from removal by Protect (do_not_disrupt set by the cluster
  // state, not by a label); true when that changed.
  bool SetProtected(const std::string& instance_id, bool on);

  // The running work of a node whose work is replacement demand changed, or
  // such a node came or went: the snapshot's pending units are rebuilt.
  void NoteReplacementDemandMoved() { replacement_demand_moved_ = true; }
  bool TakeReplacementDemandMoved() { return std::exchange(replacement_demand_moved_, false); }

  // The instance list: read at most every `interval`; the last read's
  // outcome stands in between.
  bool ListingDue(WallTime now, Seconds interval) const { return !last_list_ || now - *last_list_ >= interval; }
  void Listed(WallTime now, bool ok);
  bool last_listing_ok() const { return last_list_ok_; }
  // A listing succeeded since the start.
  bool listed_once() const { return listed_once_; }

 private:
  void RebuildIndex(const std::vector<Node>& nodes);

  std::vector<NodeRecord> records_;                  // parallel to the nodes
  std::unordered_map<std::string, size_t> index_;    // instance id (placeholders: id) -> index
  size_t placeholders_ = 0;
  std::vector<Node> billed_;                         // Billed() while placeholders_ > 0
  std::set<std::string> ended_;
  std::set<std::string> recorded_before_start_;
  std::set<std::string> draining_;
  std::set<std::string> protected_;
  std::optional<WallTime> last_list_;
  bool last_list_ok_ = true;
  bool listed_once_ = false;
  bool replacement_demand_moved_ = false;
};

}  // namespace gpuscaler
