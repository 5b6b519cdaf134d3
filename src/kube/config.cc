// In-cluster and kubeconfig configuration. Field names follow the kubeconfig
// format (clusters / users / contexts, current-context) and client-go's
// rest.InClusterConfig.
#include "gpuscaler/kube/config.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <filesystem>

#include "gpuscaler/model/bounded_yaml.h"
#include "gpuscaler/model/text.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::kube {
namespace {

std::string Resolve(const std::filesystem::path& dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (dir / path).lexically_normal().string();
}

// The entry of a kubeconfig list (clusters, users, contexts) with that name.
YAML::Node Named(const YAML::Node& list, const std::string& name, const char* field) {
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const YAML::Node& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name && item[field] && item[field].IsMap())
      return item[field];
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Str(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

Result<std::string> Decoded(const YAML::Node& n, const char* key) {
  std::optional<std::string> d = Base64Decode(Str(n, key));
  if (!d) return Error::Config(std::string(key) + " is not valid base64");
  return *d;
}

Result<std::string> FileText(const std::string& path, const std::string& what) {
  Result<std::string> t = ReadConfigFile(path);
  if (!t) return Error::Config(what + ": " + t.error().message());
  return t;
}

// A user's PEM: `<field>-data` (base64) if present, else the file named by
// `<field>` (relative to the kubeconfig's directory), else "".
Result<std::string> UserPem(const YAML::Node& user, const std::string& user_name, const std::filesystem::path& dir,
                            const std::string& field) {
  const std::string data_field = field + "-data";
  if (user[data_field]) {
    Result<std::string> d = Decoded(user, data_field.c_str());
    if (!d) return d.error().WithContext("user '" + user_name + "'");
    return d;
  }
  if (const std::string f = Str(user, field.c_str()); !f.empty()) {
    return FileText(Resolve(dir, f), "user '" + user_name + "' " + field);
  }
  return std::string();
}

Result<ClusterConfig> FromKubeconfig(const YAML::Node& root, const std::filesystem::path& dir, std::string context) {
  if (context.empty()) context = Str(root, "current-context");
  if (context.empty()) return Error::Config("no context given and no current-context");
  const YAML::Node ctx = Named(root["contexts"], context, "context");
  if (!ctx.IsDefined()) return Error::Config("context '" + context + "' not found");
  const std::string cluster_name = Str(ctx, "cluster");
  const YAML::Node cluster = Named(root["clusters"], cluster_name, "cluster");
  if (!cluster.IsDefined()) return Error::Config("context '" + context + "': cluster '" + cluster_name + "' not found");
  ClusterConfig c;
  c.server = Str(cluster, "server");
  if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0)
    return Error::Config("cluster '" + cluster_name + "': server must be an http(s) URL");
  c.ca_file = Resolve(dir, Str(cluster, "certificate-authority"));
  if (cluster["certificate-authority-data"]) {
    Result<std::string> ca = Decoded(cluster, "certificate-authority-data");
    if (!ca) return ca.error().WithContext("cluster '" + cluster_name + "'");
    c.ca_pem = *ca;
  }
  c.insecure_skip_verify = Str(cluster, "insecure-skip-tls-verify") == "true";
  c.namespace_name = Str(ctx, "namespace");
  if (c.namespace_name.empty()) c.namespace_name = "default";

  const std::string user_name = Str(ctx, "user");
  if (user_name.empty()) return c;  // anonymous
  const YAML::Node user = Named(root["users"], user_name, "user");
  if (!user.IsDefined()) return Error::Config("context '" + context + "': user '" + user_name + "' not found");
  for (const char* plugin : {"exec", "auth-provider"}) {
    if (user[plugin])
      return Error::Config("user '" + user_name + "': '" + plugin +
                           "' credential plugins are not supported; use a token, tokenFile or client certificate");
  }
  c.token = Str(user, "token");
  c.token_file = Resolve(dir, Str(user, "tokenFile"));
  Result<std::string> cert = UserPem(user, user_name, dir, "client-certificate");
  if (!cert) return cert.error();
  c.client_cert_pem = *cert;
  Result<std::string> key = UserPem(user, user_name, dir, "client-key");
  if (!key) return key.error();
  c.client_key_pem = *key;
  if (c.client_cert_pem.empty() != c.client_key_pem.empty())
    return Error::Config("user '" + user_name + "': a client certificate needs both certificate and key");
  return c;
}

}  // namespace

std::optional<std::string> Base64Decode(std::string_view text) {
  std::array<int, 256> value;
  value.fill(-1);
  const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < alphabet.size(); ++i) value[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t padding = 0;
  for (char ch : text) {
    if (ch == '\n' || ch == '\r' || ch == ' ') continue;  // wrapped PEM-style data
    if (ch == '=') {
      ++padding;
      continue;
    }
    const int v = value[static_cast<unsigned char>(ch)];
    if (v < 0 || padding > 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (padding > 2 || bits >= 6) return std::nullopt;
  return out;
}

Result<ClusterConfig> InClusterConfig(const EnvLookup& env, const std::string& service_account_dir) {
  const std::optional<std::string> host = env("KUBERNETES_SERVICE_HOST");
  const std::optional<std::string> port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    return Error::Config("not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  ClusterConfig c;
  // An IPv6 service address needs brackets in a URL.
  const bool v6 = host->find(':') != std::string::npos;
  c.server = "https://" + (v6 ? "[" + *host + "]" : *host) + ":" + *port;
  const std::filesystem::path dir(service_account_dir);
  c.token_file = (dir / "token").string();
  c.ca_file = (dir / "ca.crt").string();
  // Checked now so a pod without a mounted service account fails at start,
  // not at the first request.
  for (const std::string& f : {c.token_file, c.ca_file}) {
    if (Result<std::string> t = FileText(f, "service account"); !t) return t.error();
  }
  if (Result<std::string> ns = ReadConfigFile((dir / "namespace").string()); ns && !Trim(*ns).empty())
    c.namespace_name = Trim(*ns);
  return c;
}

Result<ClusterConfig> KubeconfigConfig(const std::string& path, const std::string& context) {
  Result<std::string> text = FileText(path, "kubeconfig");
  if (!text) return text.error();
  try {
    Result<YAML::Node> loaded = LoadBoundedYaml(*text);
    if (!loaded) return loaded.error().WithContext("kubeconfig " + path);
    const YAML::Node root = *loaded;
    if (!root.IsMap()) return Error::Config("kubeconfig " + path + ": not a mapping");
    Result<ClusterConfig> c = FromKubeconfig(root, std::filesystem::path(path).parent_path(), context);
    if (!c) return c.error().WithContext("kubeconfig " + path);
    return c;
  } catch (const YAML::Exception& e) {
    return Error::Config("kubeconfig " + path + ": " + e.what());
  }
}

}  // namespace gpuscaler::kube
