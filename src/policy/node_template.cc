// Pool labels and node templates: what reaches a node's kubelet, so every
// key and value must be one Kubernetes accepts (a bad one would make the node
// fail to register, long after the policy was loaded).
#include <algorithm>
#include <cctype>

#include "policy_reader.h"

namespace gpuscaler::policy_detail {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A label name or value: at most 63 characters, alphanumerics with '-', '_'
// and '.' inside.
bool IsLabelName(std::string_view s) {
  if (s.empty() || s.size() > 63 || !Alnum(s.front()) || !Alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return Alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS subdomain: lower-case alphanumerics, '-' and '.', at most 253.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253 || !Alnum(s.front()) || !Alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (std::islower(static_cast<unsigned char>(c)) != 0) || std::isdigit(static_cast<unsigned char>(c)) != 0 ||
           c == '-' || c == '.';
  });
}

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// "'s'", built by appending: GCC 12 warns falsely (-Wrestrict) on "'" + std::string(s).
std::string InQuotes(std::string_view s) {
  std::string out(1, '\'');
  out.append(s);
  out += '\'';
  return out;
}

const std::vector<std::string_view> kVolumeTypes = {"gp3", "gp2", "io1", "io2", "st1", "sc1", "standard"};

}  // namespace

std::string KubernetesKeyProblem(std::string_view key) {
  const size_t slash = key.find('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (slash != std::string_view::npos && !IsDnsSubdomain(key.substr(0, slash))) {
    return "prefix of " + InQuotes(key) + " is not a DNS subdomain (lower-case letters, digits, '-', '.')";
  }
  if (!IsLabelName(name)) {
    return InQuotes(key) +
           " is not a Kubernetes key (a name of at most 63 letters, digits, '-', '_', '.', starting and ending "
           "with a letter or digit, optionally after 'prefix/')";
  }
  return "";
}

std::string KubernetesValueProblem(std::string_view value) {
  if (value.empty() || IsLabelName(value)) return "";
  return InQuotes(value) +
         " is not a Kubernetes label or taint value (at most 63 letters, digits, '-', '_', '.', starting and "
         "ending with a letter or digit)";
}

std::string NodeLabelKeyProblem(std::string_view key) {
  if (std::string problem = KubernetesKeyProblem(key); !problem.empty()) return problem;
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return "";
  const std::string_view prefix = key.substr(0, slash);
  if (prefix == "gpuscaler.io") return "keys under gpuscaler.io/ are set by gpuscaler itself";
  if (prefix == "nvidia.com" && key.substr(slash + 1) == "mig.config") {
    return "nvidia.com/mig.config is set by node_template.mig_config";
  }
  // The kubelet refuses to register with these (NodeRestriction), except
  // under its own node. and kubelet. subdomains.
  const bool restricted = prefix == "kubernetes.io" || prefix == "k8s.io" || EndsWith(prefix, ".kubernetes.io") ||
                          EndsWith(prefix, ".k8s.io");
  const bool allowed = prefix == "node.kubernetes.io" || prefix == "kubelet.kubernetes.io" ||
                       EndsWith(prefix, ".node.kubernetes.io") || EndsWith(prefix, ".kubelet.kubernetes.io");
  if (restricted && !allowed) {
    return "the kubelet may not set labels under " + std::string(prefix) +
           "/ (use node.kubernetes.io/ or your own prefix)";
  }
  return "";
}

void PolicyReader::ReadPoolLabels(MapReader& m, NodePoolPolicy* pool) {
  if (!m.ReadStringMap("labels", &pool->labels)) return;
  for (const auto& [key, value] : pool->labels) {
    const std::string path = m.PathOf("labels") + "." + key;
    if (std::string problem = NodeLabelKeyProblem(key); !problem.empty()) r_.ReportAt(path, problem);
    if (std::string problem = KubernetesValueProblem(value); !problem.empty()) r_.ReportAt(path, problem);
  }
}

void PolicyReader::ReadIdsOrSelectors(MapReader& m, const IdOrSelectorList& list, std::vector<std::string>* ids,
                                      std::vector<std::map<std::string, std::string>>* selectors) {
  const DocNode* node = m.Find(list.key);
  if (node == nullptr) return;
  if (node->IsNull() || (node->IsSequence() && node->items.empty())) {
    r_.Report(*node, m.PathOf(list.key),
              "must list at least one " + std::string(list.id_prefix) + "… id or {tags: {…}} selector" +
                  (list.optional ? " (or be left out)" : ""));
    return;
  }
  m.ForEachItem(list.key, [&](const DocNode& n, const std::string& path) {
    if (n.IsScalar()) {
      if (n.scalar.rfind(list.id_prefix, 0) != 0) {
        r_.Report(n, path,
                  InQuotes(n.scalar) + " is not a " + std::string(list.id_name) + " id (" +
                      std::string(list.id_prefix) + "…; or {tags: {key: value}})");
      }
      ids->push_back(n.scalar);
      return;
    }
    MapReader selector(r_, n, path, {"tags"});
    if (!n.IsMapping()) return;
    std::map<std::string, std::string> tags;
    if (!selector.Require({"tags"}) || !selector.ReadStringMap("tags", &tags)) return;
    if (tags.empty()) {
      r_.ReportAt(selector.PathOf("tags"), "must name at least one tag (an empty selector would match every " +
                                               std::string(list.every) + ")");
      return;
    }
    selectors->push_back(std::move(tags));
  });
}

void PolicyReader::ReadNodeTemplate(MapReader& pool_reader, NodePoolPolicy* pool) {
  const DocNode* node = pool_reader.Find("node_template");
  if (node == nullptr || node->IsNull()) {
    if (!pool->labels.empty()) {
      r_.ReportAt(pool_reader.PathOf("labels"),
                  "labels reach nodes only through a node_template (add one, or set them in your launch template "
                  "and remove them here)");
    }
    return;
  }
  const std::string path = pool_reader.PathOf("node_template");
  MapReader m(r_, *node, path,
              {"ami", "ami_family", "instance_profile", "security_groups", "subnets", "block_devices", "mig_config"});
  if (!node->IsMapping()) return;
  m.Require({"instance_profile", "security_groups"});
  NodeTemplate t;
  ReadIdsOrSelectors(m, {"security_groups", "sg-", "security group", "group", false}, &t.security_groups,
                     &t.security_group_selectors);
  ReadIdsOrSelectors(m, {"subnets", "subnet-", "subnet", "subnet", true}, &t.subnets, &t.subnet_selectors);
  if (const DocNode* ami = m.Find("ami"); ami != nullptr && !ami->IsNull()) {
    MapReader a(r_, *ami, m.PathOf("ami"), {"id", "ssm_parameter"});
    a.ReadString("id", &t.ami_id);
    a.ReadString("ssm_parameter", &t.ami_ssm_parameter);
    if (a.Has("id") && a.Has("ssm_parameter")) {
      r_.ReportAt(a.PathOf("ssm_parameter"), "give either id or ssm_parameter, not both");
    } else if (ami->IsMapping() && !a.Has("id") && !a.Has("ssm_parameter")) {
      r_.ReportAt(m.PathOf("ami"), "needs id (ami-…) or ssm_parameter (/aws/service/…); omit ami for the "
                                   "EKS-optimized NVIDIA AMI");
    }
    if (a.Has("id") && t.ami_id.rfind("ami-", 0) != 0) {
      r_.ReportAt(a.PathOf("id"), "'" + t.ami_id + "' is not an AMI id (ami-…)");
    }
    if (a.Has("ssm_parameter") && t.ami_ssm_parameter.rfind('/', 0) != 0) {
      r_.ReportAt(a.PathOf("ssm_parameter"), "'" + t.ami_ssm_parameter + "' is not an SSM parameter path (/…)");
    }
  }
  if (m.ReadString("ami_family", &t.ami_family) && t.ami_family != "al2023" && t.ami_family != "bottlerocket") {
    r_.ReportAt(m.PathOf("ami_family"),
                WithSuggestion("unknown ami_family '" + t.ami_family + "' (use al2023 or bottlerocket)", t.ami_family,
                               {"al2023", "bottlerocket"}));
  }
  if (m.ReadString("instance_profile", &t.instance_profile) && t.instance_profile.empty()) {
    r_.ReportAt(m.PathOf("instance_profile"), "must not be empty (the IAM instance profile nodes run as)");
  }
  m.ForEachItem("block_devices", [&](const DocNode& n, const std::string& dpath) {
    MapReader d(r_, n, dpath, {"device_name", "volume_size_gib", "volume_type", "iops", "throughput", "encrypted"});
    d.Require({"device_name", "volume_size_gib"});
    BlockDevice dev;
    if (d.ReadString("device_name", &dev.device_name) && dev.device_name.rfind("/dev/", 0) != 0) {
      r_.ReportAt(d.PathOf("device_name"), "'" + dev.device_name + "' is not a device name (/dev/…)");
    }
    if (d.ReadInt("volume_size_gib", &dev.volume_size_gib) &&
        (dev.volume_size_gib < 1 || dev.volume_size_gib > 65536)) {
      r_.ReportAt(d.PathOf("volume_size_gib"), "must be in [1, 65536], got " + std::to_string(dev.volume_size_gib));
    }
    if (d.ReadString("volume_type", &dev.volume_type) &&
        std::find(kVolumeTypes.begin(), kVolumeTypes.end(), dev.volume_type) == kVolumeTypes.end()) {
      r_.ReportAt(d.PathOf("volume_type"),
                  WithSuggestion("unknown volume_type '" + dev.volume_type + "' (use gp3, gp2, io1, io2, st1, sc1 "
                                 "or standard)",
                                 dev.volume_type, kVolumeTypes));
    }
    int iops = 0;
    if (d.ReadInt("iops", &iops)) {
      if (dev.volume_type != "gp3" && dev.volume_type != "io1" && dev.volume_type != "io2") {
        r_.ReportAt(d.PathOf("iops"), "is set only for gp3, io1 and io2 volumes");
      } else if (iops < 100) {
        r_.ReportAt(d.PathOf("iops"), "must be >= 100, got " + std::to_string(iops));
      }
      dev.iops = iops;
    }
    int throughput = 0;
    if (d.ReadInt("throughput", &throughput)) {
      if (dev.volume_type != "gp3") {
        r_.ReportAt(d.PathOf("throughput"), "is set only for gp3 volumes");
      } else if (throughput < 125) {
        r_.ReportAt(d.PathOf("throughput"), "must be >= 125 (MiB/s), got " + std::to_string(throughput));
      }
      dev.throughput_mibps = throughput;
    }
    d.ReadBool("encrypted", &dev.encrypted);
    t.block_devices.push_back(std::move(dev));
  });
  for (size_t i = 0; i < t.block_devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (t.block_devices[i].device_name == t.block_devices[j].device_name) {
        r_.ReportAt(IndexPath(m.PathOf("block_devices"), i) + ".device_name",
                    "'" + t.block_devices[i].device_name + "' is listed twice");
      }
    }
  }
  if (m.ReadString("mig_config", &t.mig_config)) {
    if (t.mig_config.empty()) {
      r_.ReportAt(m.PathOf("mig_config"), "must not be empty (omit it for no MIG layout)");
    } else if (std::string problem = KubernetesValueProblem(t.mig_config); !problem.empty()) {
      r_.ReportAt(m.PathOf("mig_config"), problem);
    }
  }
  if (pool->actuation == Actuation::kAsg) {
    r_.ReportAt(path, "is for fleet pools only (an Auto Scaling group launches from its own launch template)");
  }
  pool->node_template = std::move(t);
}

}  // namespace gpuscaler::policy_detail
