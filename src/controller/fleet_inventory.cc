#include "gpuscaler/controller/fleet_inventory.h"

#include <utility>

namespace gpuscaler {

std::optional<size_t> FleetInventory::Find(const std::string& id) const {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

void FleetInventory::Add(std::vector<Node>& nodes, Node node, NodeRecord record) {
  index_[node.instance_id.empty() ? node.id : node.instance_id] = nodes.size();
  if (record.placeholder()) ++placeholders_;
  nodes.push_back(std::move(node));
  records_.push_back(std::move(record));
}

void FleetInventory::Remove(std::vector<Node>& nodes, size_t index) {
  if (records_[index].placeholder()) --placeholders_;
  nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(index));
  records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(index));
  RebuildIndex(nodes);
}

void FleetInventory::Claim(std::vector<Node>& nodes, size_t index, Node node, NodeRecord record) {
  if (records_[index].placeholder()) --placeholders_;
  index_.erase(nodes[index].id);
  index_[node.instance_id] = index;
  nodes[index] = std::move(node);
  records_[index] = std::move(record);
}

const std::vector<Node>& FleetInventory::Billed(const std::vector<Node>& nodes) {
  if (placeholders_ == 0) return nodes;
  billed_.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!records_[i].placeholder()) billed_.push_back(nodes[i]);
  }
  return billed_;
}

void FleetInventory::SetDraining(const std::string& instance_id, bool draining) {
  if (draining) {
    draining_.insert(instance_id);
  } else {
    draining_.erase(instance_id);
  }
}

bool FleetInventory::SetProtected(const std::string& instance_id, bool on) {
  return on ? protected_.insert(instance_id).second : protected_.erase(instance_id) != 0;
}

void FleetInventory::Listed(WallTime now, bool ok) {
  last_list_ = now;
  last_list_ok_ = ok;
  listed_once_ = listed_once_ || ok;
}

void FleetInventory::RebuildIndex(const std::vector<Node>& nodes) {
  index_.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    index_[n.instance_id.empty() ? n.id : n.instance_id] = i;
  }
}

}  // namespace gpuscaler
