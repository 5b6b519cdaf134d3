// Where the Kubernetes API server is and how to authenticate to it: from
// inside a pod (the service account the kubelet mounts) or from a kubeconfig
// file (running outside the cluster). Values only; thread-safe to read.
// Reference: docs/kubernetes.md ("What gpuscaler does in the cluster").
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "gpuscaler/status.h"

namespace gpuscaler::kube {

// Where the kubelet mounts a pod's service account.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct ClusterConfig {
  std::string server;  // "https://10.0.0.1:443"
  // Trusted CAs: a PEM file, and/or PEM text (kubeconfig certificate-authority-data).
  std::string ca_file;
  std::string ca_pem;
  // Bearer token: a file read again whenever it changes (the kubelet rotates
  // projected service-account tokens), or a fixed value. Both empty: none.
  std::string token_file;
  std::string token;
  // Client certificate authentication (kubeconfig), PEM text.
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_verify = false;
  std::string namespace_name = "default";  // the pod's own namespace in-cluster
};

// Looks an environment variable up (std::getenv in main; a map in tests).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
// the token, CA bundle and namespace files in `service_account_dir`.
// kConfig when the variables are missing (not in a cluster) or the CA or
// token file is unreadable; a missing namespace file means "default".
Result<ClusterConfig> InClusterConfig(const EnvLookup& env, const std::string& service_account_dir = kServiceAccountDir);

// The configuration of `context` (empty: current-context) in a kubeconfig
// file: the cluster's server and CA (file or data, paths relative to the
// file), the user's token, tokenFile or client certificate and key (file or
// data), the context's namespace. Exec and auth-provider plugins are not
// supported (kConfig naming them). kConfig for anything missing or malformed.
Result<ClusterConfig> KubeconfigConfig(const std::string& path, const std::string& context = "");

// Standard base64 (RFC 4648) with or without padding; nullopt when malformed.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace gpuscaler::kube
