// Rendering a pool's node template (policy pools[].node_template) into the
// EC2 launch template its nodes boot from: the AMI, instance profile,
// security groups, volumes, and user data that joins the node to the EKS
// cluster with exactly the pool's labels and taints plus gpuscaler's own
// labels. Reference: docs/kubernetes.md ("Node templates").
//
// Pure functions over values; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/cloud/launch_template_api.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// The NVIDIA GPU Operator's MIG layout label (node_template.mig_config).
inline constexpr const char* kMigConfigLabel = "nvidia.com/mig.config";
// Version descriptions of the launch template versions gpuscaler writes:
// this prefix, then the SHA-256 (hex) of the version's content.
inline constexpr const char* kTemplateHashPrefix = "gpuscaler content sha256:";

// What a node needs to join the cluster (daemon configuration cloud.eks).
struct EksCluster {
  std::string name;                   // the EKS cluster (daemon cluster_name)
  std::string kubernetes_version;     // "1.31": picks the default AMI
  std::string api_server_endpoint;    // "https://…"
  std::string certificate_authority;  // base64 of the cluster CA's PEM
  std::string service_cidr;           // "10.100.0.0/16"

  bool configured() const { return !api_server_endpoint.empty(); }
};

// "gpuscaler-<cluster>-<pool>".
std::string LaunchTemplateName(const std::string& cluster, const std::string& pool);

// The public SSM parameter of the EKS-optimized NVIDIA x86_64 AMI of
// `ami_family` (al2023 | bottlerocket) for Kubernetes `version`.
std::string DefaultAmiParameter(const std::string& ami_family, const std::string& version);

// The labels a pool's node registers with: the pool's labels,
// gpuscaler.io/pool=<pool>, gpuscaler.io/cluster=<cluster> and, with a
// mig_config, nvidia.com/mig.config=<mig_config>.
std::map<std::string, std::string> NodeLabels(const std::string& cluster, const std::string& pool,
                                              const std::map<std::string, std::string>& labels,
                                              const NodeTemplate& node_template);

// User data joining the node with `labels` and `taints`: for al2023 a MIME
// multi-part document with one application/node.eks.aws NodeConfig (kubelet
// flags --node-labels and --register-with-taints); for bottlerocket TOML
// settings ([settings.kubernetes], node-labels, node-taints). kConfig for an
// unknown family or a cluster without endpoint, CA or name.
Result<std::string> RenderUserData(const EksCluster& cluster, const std::string& ami_family,
                                   const std::map<std::string, std::string>& labels, const std::vector<Taint>& taints);

// The whole launch template of a pool, with `image_id` already resolved.
struct RenderedLaunchTemplate {
  std::string name;
  LaunchTemplateData data;
  std::map<std::string, std::string> tags;  // on the template: cluster and pool
  // SHA-256 (hex) of the name and data parameters: equal hashes, equal
  // templates.
  std::string content_hash;
};
Result<RenderedLaunchTemplate> RenderLaunchTemplate(const EksCluster& cluster, const std::string& pool,
                                                    const std::map<std::string, std::string>& labels,
                                                    const std::vector<Taint>& taints,
                                                    const NodeTemplate& node_template, const std::string& image_id);

}  // namespace gpuscaler::cloud
