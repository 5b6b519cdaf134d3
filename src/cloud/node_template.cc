#include "gpuscaler/cloud/node_template.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/cloud/sigv4.h"

namespace gpuscaler::cloud {
namespace {

// A double-quoted string both YAML and TOML read back as `s` (JSON's escapes
// are a subset of both).
std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

// "k=v:Effect" (or "k:Effect" without a value), as the kubelet's
// --register-with-taints takes it.
std::string KubeletTaint(const Taint& t) {
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
}

// The cluster DNS address: the service CIDR's tenth address, as EKS assigns
// it. "" when the CIDR is not IPv4.
std::string ClusterDnsIp(const std::string& cidr) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (std::sscanf(cidr.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4 || a > 255 || b > 255 || c > 255 || d > 245) {
    return "";
  }
  return std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c) + "." + std::to_string(d + 10);
}

std::string Al2023UserData(const EksCluster& cluster, const std::map<std::string, std::string>& labels,
                           const std::vector<Taint>& taints) {
  std::string node_labels = "--node-labels=";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) node_labels += ',';
    first = false;
    node_labels += k + "=" + v;
  }
  std::string out =
      "MIME-Version: 1.0\n"
      "Content-Type: multipart/mixed; boundary=\"//\"\n"
      "\n"
      "--//\n"
      "Content-Type: application/node.eks.aws\n"
      "\n"
      "---\n"
      "apiVersion: node.eks.aws/v1alpha1\n"
      "kind: NodeConfig\n"
      "spec:\n"
      "  cluster:\n";
  out += "    name: " + Quote(cluster.name) + "\n";
  out += "    apiServerEndpoint: " + Quote(cluster.api_server_endpoint) + "\n";
  out += "    certificateAuthority: " + Quote(cluster.certificate_authority) + "\n";
  if (!cluster.service_cidr.empty()) out += "    cidr: " + Quote(cluster.service_cidr) + "\n";
  out += "  kubelet:\n    flags:\n";
  out += "      - " + Quote(node_labels) + "\n";
  if (!taints.empty()) {
    std::string flag = "--register-with-taints=";
    for (size_t i = 0; i < taints.size(); ++i) {
      if (i > 0) flag += ',';
      flag += KubeletTaint(taints[i]);
    }
    out += "      - " + Quote(flag) + "\n";
  }
  out += "\n--//--\n";
  return out;
}

std::string BottlerocketUserData(const EksCluster& cluster, const std::map<std::string, std::string>& labels,
                                 const std::vector<Taint>& taints) {
  std::string out = "[settings.kubernetes]\n";
  out += "cluster-name = " + Quote(cluster.name) + "\n";
  out += "api-server = " + Quote(cluster.api_server_endpoint) + "\n";
  out += "cluster-certificate = " + Quote(cluster.certificate_authority) + "\n";
  if (std::string dns = ClusterDnsIp(cluster.service_cidr); !dns.empty()) out += "cluster-dns-ip = " + Quote(dns) + "\n";
  out += "\n[settings.kubernetes.node-labels]\n";
  for (const auto& [k, v] : labels) out += Quote(k) + " = " + Quote(v) + "\n";
  if (!taints.empty()) {
    // One key may carry several taints (one per effect): Bottlerocket takes
    // a list of "value:Effect" per key.
    std::map<std::string, std::vector<std::string>> by_key;
    for (const Taint& t : taints) by_key[t.key].push_back(t.value + ":" + t.effect);
    out += "\n[settings.kubernetes.node-taints]\n";
    for (const auto& [k, values] : by_key) {
      out += Quote(k) + " = [";
      for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out += ", ";
        out += Quote(values[i]);
      }
      out += "]\n";
    }
  }
  return out;
}

}  // namespace

std::string LaunchTemplateName(const std::string& cluster, const std::string& pool) {
  return "gpuscaler-" + cluster + "-" + pool;
}

std::string DefaultAmiParameter(const std::string& ami_family, const std::string& version) {
  if (ami_family == "bottlerocket") return "/aws/service/bottlerocket/aws-k8s-" + version + "-nvidia/x86_64/latest/image_id";
  return "/aws/service/eks/optimized-ami/" + version + "/amazon-linux-2023/x86_64/nvidia/recommended/image_id";
}

std::map<std::string, std::string> NodeLabels(const std::string& cluster, const std::string& pool,
                                              const std::map<std::string, std::string>& labels,
                                              const NodeTemplate& node_template) {
  std::map<std::string, std::string> out = labels;
  out[kOwnerTag] = pool;
  out[kClusterTag] = cluster;
  if (!node_template.mig_config.empty()) out[kMigConfigLabel] = node_template.mig_config;
  return out;
}

Result<std::string> RenderUserData(const EksCluster& cluster, const std::string& ami_family,
                                   const std::map<std::string, std::string>& labels, const std::vector<Taint>& taints) {
  if (cluster.name.empty() || cluster.api_server_endpoint.empty() || cluster.certificate_authority.empty()) {
    return Error::Config("node template: the cluster's name, API server endpoint and certificate authority are "
                         "needed (daemon configuration cloud.eks)");
  }
  if (ami_family == "al2023") return Al2023UserData(cluster, labels, taints);
  if (ami_family == "bottlerocket") return BottlerocketUserData(cluster, labels, taints);
  return Error::Config("node template: unknown ami_family '" + ami_family + "'");
}

Result<RenderedLaunchTemplate> RenderLaunchTemplate(const EksCluster& cluster, const std::string& pool,
                                                    const std::map<std::string, std::string>& labels,
                                                    const std::vector<Taint>& taints,
                                                    const NodeTemplate& node_template, const std::string& image_id) {
  Result<std::string> user_data =
      RenderUserData(cluster, node_template.ami_family, NodeLabels(cluster.name, pool, labels, node_template), taints);
  if (!user_data.ok()) return user_data.error();
  RenderedLaunchTemplate t;
  t.name = LaunchTemplateName(cluster.name, pool);
  t.data.image_id = image_id;
  t.data.user_data = std::move(user_data).value();
  t.data.instance_profile = node_template.instance_profile;
  t.data.security_group_ids = node_template.security_groups;
  t.data.block_devices = node_template.block_devices;
  t.tags = {{kClusterTag, cluster.name}, {kOwnerTag, pool}};
  QueryParams hashed = LaunchTemplateDataParams(t.data);
  hashed.insert(hashed.begin(), {"LaunchTemplateName", t.name});
  t.content_hash = Sha256Hex(EncodeForm(hashed));
  return t;
}

}  // namespace gpuscaler::cloud
