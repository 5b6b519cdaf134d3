// The Kubernetes manifests as an operator gets them: `kubectl kustomize
// config/kubernetes` (and the base alone) rendered, then the objects checked
// for least privilege, pod hardening, probes on real endpoints, a hot-reloadable
// policy mount, and agreement with the daemon configuration they ship.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gpuscaler/daemon/config.h"
#include "gpuscaler/policy/loader.h"
#include "kube/tools.h"

namespace gpuscaler::kube_test {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = "config/kubernetes";
const fs::path kBase = "config/kubernetes/base";
const fs::path kOverlay = "config/kubernetes/overlays/eks-example";
const fs::path kGkeOverlay = "config/kubernetes/overlays/gke";
const fs::path kAksOverlay = "config/kubernetes/overlays/aks";

// One (apiGroup, resource, verb, resourceName) grant; resourceName "" = any.
using Grant = std::tuple<std::string, std::string, std::string, std::string>;

std::set<Grant> Grants(const YAML::Node& role) {
  std::set<Grant> grants;
  for (const YAML::Node& rule : role["rules"]) {
    std::vector<std::string> names;
    if (rule["resourceNames"]) names = rule["resourceNames"].as<std::vector<std::string>>();
    if (names.empty()) names.push_back("");
    EXPECT_FALSE(rule["nonResourceURLs"]) << "no non-resource URLs";
    for (const auto& group : rule["apiGroups"].as<std::vector<std::string>>())
      for (const auto& resource : rule["resources"].as<std::vector<std::string>>())
        for (const auto& verb : rule["verbs"].as<std::vector<std::string>>())
          for (const auto& name : names) grants.insert({group, resource, verb, name});
  }
  return grants;
}

std::string Str(const YAML::Node& n) { return n ? n.as<std::string>("") : ""; }

class Manifests : public ::testing::Test {
 protected:
  void SetUp() override {
    GPUSCALER_REQUIRE_TOOL(kubectl, "kubectl");
    kubectl_ = kubectl;
    root_ = Kustomize(kubectl_, SourceDir() / kRoot);
    ASSERT_FALSE(root_.empty());
  }

  std::vector<YAML::Node> RenderBase() { return Kustomize(kubectl_, SourceDir() / kBase); }

  YAML::Node Deployment(const std::vector<YAML::Node>& objects) { return FindObject(objects, "Deployment", "gpuscaler"); }

  // The daemon configuration the rendered ConfigMap carries, loaded with the
  // daemon's own loader.
  daemon::DaemonConfig RenderedDaemonConfig(const std::vector<YAML::Node>& objects) {
    const YAML::Node cm = FindObject(objects, "ConfigMap", "gpuscaler-config", /*hashed=*/true);
    EXPECT_TRUE(cm) << "no gpuscaler-config ConfigMap";
    TempDir dir;
    const fs::path file = dir.path() / "gpuscaler.yaml";
    WriteFile(file, Str(cm["data"]["gpuscaler.yaml"]));
    Result<daemon::DaemonConfig> config = daemon::LoadDaemonConfig(file.string());
    EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message());
    return config.ok() ? *config : daemon::DaemonConfig{};
  }

  fs::path kubectl_;
  std::vector<YAML::Node> root_;
};

TEST_F(Manifests, RenderEveryObjectTheControllerNeeds) {
  struct Want {
    std::string kind, name;
    bool hashed = false;
    bool in_base = true;
  };
  const std::vector<Want> wants = {
      {"Namespace", "gpuscaler"},
      {"ServiceAccount", "gpuscaler"},
      {"ClusterRole", "gpuscaler"},
      {"ClusterRoleBinding", "gpuscaler"},
      {"Role", "gpuscaler-leader-election"},
      {"RoleBinding", "gpuscaler-leader-election"},
      {"ConfigMap", "gpuscaler-config", true},
      {"ConfigMap", "gpuscaler-policy"},
      {"PersistentVolumeClaim", "gpuscaler-audit"},
      {"Deployment", "gpuscaler"},
      {"Service", "gpuscaler"},
      {"NetworkPolicy", "gpuscaler"},
      {"ServiceMonitor", "gpuscaler", false, false},
      {"PrometheusRule", "gpuscaler", false, false},
  };
  const std::vector<YAML::Node> base = RenderBase();
  for (const Want& w : wants) {
    SCOPED_TRACE(w.kind + "/" + w.name);
    EXPECT_TRUE(FindObject(root_, w.kind, w.name, w.hashed)) << "missing from config/kubernetes";
    EXPECT_EQ(static_cast<bool>(FindObject(base, w.kind, w.name, w.hashed)), w.in_base);
  }
  EXPECT_EQ(root_.size(), wants.size()) << "an object the test does not know about was added";

  const std::set<std::string> cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"};
  for (const YAML::Node& o : root_) {
    const std::string kind = Str(o["kind"]);
    SCOPED_TRACE(kind + "/" + Str(o["metadata"]["name"]));
    EXPECT_NE(kind, "Secret") << "secret values never live in the manifests";
    if (!cluster_scoped.count(kind)) {
      EXPECT_EQ(Str(o["metadata"]["namespace"]), "gpuscaler");
    }
  }
}

TEST_F(Manifests, RbacGrantsExactlyTheMinimum) {
  const std::set<Grant> cluster_want = {
      {"", "pods", "get", ""},          {"", "pods", "list", ""},           {"", "pods", "watch", ""},
      {"", "nodes", "get", ""},         {"", "nodes", "list", ""},          {"", "nodes", "watch", ""},
      {"", "nodes", "patch", ""},       {"", "pods/eviction", "create", ""}, {"", "events", "create", ""},
      {"", "events", "patch", ""},
      {"", "podtemplates", "list", ""}, {"", "podtemplates", "watch", ""},
      {"autoscaling.x-k8s.io", "provisioningrequests", "list", ""},
      {"autoscaling.x-k8s.io", "provisioningrequests", "watch", ""},
      {"autoscaling.x-k8s.io", "provisioningrequests/status", "patch", ""},
      {"scheduling.x-k8s.io", "podgroups", "list", ""},
      {"scheduling.x-k8s.io", "podgroups", "watch", ""},
      {"scheduling.volcano.sh", "podgroups", "list", ""},
      {"scheduling.volcano.sh", "podgroups", "watch", ""},
  };
  const daemon::DaemonConfig config = RenderedDaemonConfig(root_);
  const std::string lease = config.kubernetes.leader_election.lease_name;
  ASSERT_FALSE(lease.empty());
  // get/update only on the named Lease; create cannot be restricted by name.
  const std::set<Grant> ns_want = {
      {"coordination.k8s.io", "leases", "get", lease},
      {"coordination.k8s.io", "leases", "update", lease},
      {"coordination.k8s.io", "leases", "create", ""},
  };
  EXPECT_EQ(config.kubernetes.leader_election.namespace_name, "gpuscaler");

  const YAML::Node cluster_role = FindObject(root_, "ClusterRole", "gpuscaler");
  const YAML::Node role = FindObject(root_, "Role", "gpuscaler-leader-election");
  ASSERT_TRUE(cluster_role && role);
  EXPECT_EQ(Grants(cluster_role), cluster_want);
  EXPECT_EQ(Grants(role), ns_want);
  EXPECT_EQ(Str(role["metadata"]["namespace"]), "gpuscaler");

  int roles = 0;
  for (const YAML::Node& o : root_) {
    const std::string kind = Str(o["kind"]);
    if (kind == "Role" || kind == "ClusterRole") {
      ++roles;
      EXPECT_FALSE(o["aggregationRule"]);
      for (const auto& [group, resource, verb, name] : Grants(o)) {
        SCOPED_TRACE(kind + ": " + group + "/" + resource + " " + verb);
        EXPECT_EQ(group.find('*'), std::string::npos);
        EXPECT_EQ(resource.find('*'), std::string::npos);
        EXPECT_EQ(verb.find('*'), std::string::npos);
        EXPECT_NE(resource, "secrets");
        EXPECT_NE(resource, "configmaps");
        EXPECT_NE(verb, "delete") << "nodes leave through the cloud provider, pods through eviction";
        EXPECT_NE(verb, "escalate");
        EXPECT_NE(verb, "bind");
        EXPECT_NE(verb, "impersonate");
      }
    }
    if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
      SCOPED_TRACE(kind);
      const std::string want_role = kind == "RoleBinding" ? "Role" : "ClusterRole";
      EXPECT_EQ(Str(o["roleRef"]["kind"]), want_role);
      EXPECT_TRUE(FindObject(root_, want_role, Str(o["roleRef"]["name"])));
      ASSERT_EQ(o["subjects"].size(), 1u);
      EXPECT_EQ(Str(o["subjects"][0]["kind"]), "ServiceAccount");
      EXPECT_EQ(Str(o["subjects"][0]["name"]), "gpuscaler");
      EXPECT_EQ(Str(o["subjects"][0]["namespace"]), "gpuscaler");
    }
  }
  EXPECT_EQ(roles, 2);
  const YAML::Node pod = Deployment(root_)["spec"]["template"]["spec"];
  EXPECT_EQ(Str(pod["serviceAccountName"]), "gpuscaler");
}

TEST_F(Manifests, ContainerRunsAsNonRootWithReadOnlyRootFilesystem) {
  for (const auto& [label, objects] : {std::pair{"config/kubernetes", root_}, std::pair{"base", RenderBase()}}) {
    SCOPED_TRACE(label);
    const YAML::Node deployment = Deployment(objects);
    ASSERT_TRUE(deployment);
    const YAML::Node spec = deployment["spec"];
    EXPECT_EQ(spec["replicas"].as<int>(), 1);
    EXPECT_EQ(Str(spec["strategy"]["type"]), "Recreate") << "the audit volume is ReadWriteOnce";
    EXPECT_FALSE(spec["strategy"]["rollingUpdate"]);
    const YAML::Node pod = spec["template"]["spec"];
    EXPECT_EQ(pod["terminationGracePeriodSeconds"].as<int>(), 60);
    EXPECT_FALSE(pod["hostNetwork"].as<bool>(false));
    EXPECT_FALSE(pod["hostPID"].as<bool>(false));
    const YAML::Node psc = pod["securityContext"];
    EXPECT_TRUE(psc["runAsNonRoot"].as<bool>(false));
    EXPECT_EQ(psc["runAsUser"].as<int>(0), 65532);
    EXPECT_EQ(Str(psc["seccompProfile"]["type"]), "RuntimeDefault");

    ASSERT_EQ(pod["containers"].size(), 1u);
    const YAML::Node c = pod["containers"][0];
    const YAML::Node sc = c["securityContext"];
    EXPECT_TRUE(sc["runAsNonRoot"].as<bool>(false));
    EXPECT_EQ(sc["runAsUser"].as<int>(0), 65532);
    EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
    EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
    EXPECT_FALSE(sc["privileged"].as<bool>(false));
    EXPECT_EQ(sc["capabilities"]["drop"].as<std::vector<std::string>>(), std::vector<std::string>{"ALL"});
    EXPECT_FALSE(sc["capabilities"]["add"]);
    EXPECT_EQ(Str(sc["seccompProfile"]["type"]), "RuntimeDefault");
    for (const char* kind : {"requests", "limits"}) {
      EXPECT_TRUE(c["resources"][kind]["cpu"]) << kind;
      EXPECT_TRUE(c["resources"][kind]["memory"]) << kind;
    }
    // A read-only root still needs a writable /tmp.
    bool tmp = false;
    for (const YAML::Node& m : c["volumeMounts"]) {
      if (Str(m["mountPath"]) != "/tmp") continue;
      for (const YAML::Node& v : pod["volumes"])
        if (Str(v["name"]) == Str(m["name"])) tmp = static_cast<bool>(v["emptyDir"]);
    }
    EXPECT_TRUE(tmp) << "/tmp is an emptyDir";
    EXPECT_NE(Str(c["image"]).find(':'), std::string::npos) << "pinned image tag";
    EXPECT_EQ(Str(c["image"]).find(":latest"), std::string::npos);
  }
}

TEST_F(Manifests, ProbesHitHealthzAndReadyzOnTheDeclaredPort) {
  const YAML::Node pod = Deployment(root_)["spec"]["template"]["spec"];
  const YAML::Node c = pod["containers"][0];
  std::map<std::string, int> ports;  // name -> containerPort
  for (const YAML::Node& p : c["ports"]) ports[Str(p["name"])] = p["containerPort"].as<int>();
  ASSERT_EQ(ports.count("http"), 1u);
  EXPECT_EQ(ports["http"], 8080);
  auto resolve = [&](const YAML::Node& port) {
    const std::string s = Str(port);
    if (ports.count(s)) return ports[s];
    return port.as<int>(-1);
  };
  const std::vector<std::pair<std::string, std::string>> probes = {{"livenessProbe", "/healthz"},
                                                                   {"readinessProbe", "/readyz"}};
  for (const auto& [probe, path] : probes) {
    SCOPED_TRACE(probe);
    const YAML::Node get = c[probe]["httpGet"];
    ASSERT_TRUE(get);
    EXPECT_EQ(Str(get["path"]), path);
    EXPECT_EQ(resolve(get["port"]), 8080);
  }
  // The daemon listens where the probes knock.
  const daemon::DaemonConfig config = RenderedDaemonConfig(root_);
  Result<std::pair<std::string, uint16_t>> listen = daemon::ParseListenAddress(config.listen);
  ASSERT_TRUE(listen.ok());
  EXPECT_EQ(listen->second, 8080);
  EXPECT_EQ(listen->first, "0.0.0.0") << "the kubelet probes the pod IP, not loopback";

  const YAML::Node service = FindObject(root_, "Service", "gpuscaler");
  ASSERT_EQ(service["spec"]["ports"].size(), 1u);
  const YAML::Node sp = service["spec"]["ports"][0];
  EXPECT_EQ(Str(sp["name"]), "http");
  EXPECT_EQ(sp["port"].as<int>(), 8080);
  EXPECT_EQ(resolve(sp["targetPort"]), 8080);
  const YAML::Node labels = pod.IsNull() ? YAML::Node() : Deployment(root_)["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : service["spec"]["selector"])
    EXPECT_EQ(Str(labels[kv.first.as<std::string>()]), kv.second.as<std::string>());
  const YAML::Node monitor = FindObject(root_, "ServiceMonitor", "gpuscaler");
  EXPECT_EQ(Str(monitor["spec"]["endpoints"][0]["port"]), "http");
  EXPECT_EQ(Str(monitor["spec"]["endpoints"][0]["path"]), "/metrics");
}

TEST_F(Manifests, MountsEveryFileTheDaemonConfigNamesWithoutSubPath) {
  for (const auto& [label, objects] : {std::pair{"config/kubernetes", root_}, std::pair{"base", RenderBase()}}) {
    SCOPED_TRACE(label);
    const YAML::Node pod = Deployment(objects)["spec"]["template"]["spec"];
    const YAML::Node c = pod["containers"][0];
    std::map<std::string, YAML::Node> volumes;
    for (const YAML::Node& v : pod["volumes"]) volumes[Str(v["name"])] = v;
    std::map<std::string, YAML::Node> mounts;  // mountPath -> volume
    for (const YAML::Node& m : c["volumeMounts"]) {
      SCOPED_TRACE(Str(m["mountPath"]));
      // A subPath mount never sees a ConfigMap update: it would break the
      // policy's hot reload (and the Secret rotation) silently.
      EXPECT_FALSE(m["subPath"]);
      EXPECT_FALSE(m["subPathExpr"]);
      ASSERT_EQ(volumes.count(Str(m["name"])), 1u);
      mounts[Str(m["mountPath"])] = volumes[Str(m["name"])];
    }
    // --config points into the generated config ConfigMap.
    std::string config_arg;
    for (const YAML::Node& a : c["args"]) {
      const std::string s = Str(a);
      if (s.rfind("--config=", 0) == 0) config_arg = s.substr(9);
    }
    ASSERT_FALSE(config_arg.empty()) << "args pass --config=FILE";
    const fs::path config_path(config_arg);
    ASSERT_EQ(mounts.count(config_path.parent_path().string()), 1u);
    const YAML::Node config_volume = mounts[config_path.parent_path().string()];
    const YAML::Node config_map =
        FindObject(objects, "ConfigMap", Str(config_volume["configMap"]["name"]));
    ASSERT_TRUE(config_map) << "the config volume names a rendered ConfigMap";
    EXPECT_TRUE(config_map["data"][config_path.filename().string()]);
    const daemon::DaemonConfig config = RenderedDaemonConfig(objects);

    // The policy: a whole-directory ConfigMap mount whose name has no hash
    // suffix, so `kubectl apply -k` updates it in place and the daemon reloads.
    const fs::path policy(config.policy_file);
    ASSERT_EQ(mounts.count(policy.parent_path().string()), 1u) << policy;
    const YAML::Node policy_volume = mounts[policy.parent_path().string()];
    EXPECT_EQ(Str(policy_volume["configMap"]["name"]), "gpuscaler-policy");
    const YAML::Node policy_map = FindObject(objects, "ConfigMap", "gpuscaler-policy");
    ASSERT_TRUE(policy_map);
    EXPECT_FALSE(policy_volume["configMap"]["items"]) << "every key of the ConfigMap, as the kubelet swaps it";
    const std::string policy_text = Str(policy_map["data"][policy.filename().string()]);
    EXPECT_FALSE(policy_text.empty());

    // The audit database sits on the PersistentVolumeClaim.
    const fs::path db(config.db_file);
    ASSERT_EQ(mounts.count(db.parent_path().string()), 1u) << db;
    EXPECT_EQ(Str(mounts[db.parent_path().string()]["persistentVolumeClaim"]["claimName"]), "gpuscaler-audit");
    const YAML::Node pvc = FindObject(objects, "PersistentVolumeClaim", "gpuscaler-audit");
    EXPECT_EQ(pvc["spec"]["accessModes"].as<std::vector<std::string>>(),
              std::vector<std::string>{"ReadWriteOnce"});

    // Credentials are Secret references, mounted where the config reads them.
    for (const std::string& secret_file : {config.signals.rabbitmq.username_file, config.signals.rabbitmq.password_file,
                                           config.api_token_file, config.signals.prometheus.bearer_token_file}) {
      if (secret_file.empty()) continue;
      SCOPED_TRACE(secret_file);
      const fs::path p(secret_file);
      ASSERT_EQ(mounts.count(p.parent_path().string()), 1u);
      EXPECT_TRUE(mounts[p.parent_path().string()]["secret"]["secretName"]);
    }
    for (const YAML::Node& e : c["env"]) EXPECT_FALSE(e["value"]) << Str(e["name"]) << ": no literal values";

    // The rendered policy is valid for the catalog the image ships.
    TempDir dir;
    WriteFile(dir.path() / "policy.yaml", policy_text);
    const CommandResult check =
        RunCommand({GPUSCALER_BINARY, "policy", "check", (dir.path() / "policy.yaml").string(), "--catalog",
                    (SourceDir() / "config/catalogs/aws.yaml").string()});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
}

TEST_F(Manifests, NetworkPolicyAdmitsOnlyTheHttpPortAndWhatTheDaemonCalls) {
  const YAML::Node np = FindObject(root_, "NetworkPolicy", "gpuscaler")["spec"];
  ASSERT_TRUE(np);
  EXPECT_EQ(np["policyTypes"].as<std::vector<std::string>>(), (std::vector<std::string>{"Ingress", "Egress"}));
  for (const auto& kv : np["podSelector"]["matchLabels"])
    EXPECT_EQ(Str(Deployment(root_)["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()]),
              kv.second.as<std::string>());
  for (const YAML::Node& rule : np["ingress"]) {
    ASSERT_TRUE(rule["ports"]) << "ingress names its ports";
    for (const YAML::Node& p : rule["ports"]) EXPECT_EQ(p["port"].as<int>(), 8080);
    ASSERT_TRUE(rule["from"]) << "ingress names its peers";
  }
  std::set<std::pair<int, std::string>> egress;
  for (const YAML::Node& rule : np["egress"]) {
    ASSERT_TRUE(rule["ports"]) << "egress names its ports";
    for (const YAML::Node& p : rule["ports"]) egress.insert({p["port"].as<int>(), Str(p["protocol"])});
  }
  const daemon::DaemonConfig config = RenderedDaemonConfig(root_);
  auto port_of = [](const std::string& url) {
    const size_t scheme = url.find("://");
    const std::string rest = url.substr(scheme + 3);
    const size_t colon = rest.find(':'), slash = rest.find('/');
    if (colon == std::string::npos || colon > slash) return url.rfind("https", 0) == 0 ? 443 : 80;
    return std::stoi(rest.substr(colon + 1));
  };
  const std::vector<std::pair<int, std::string>> want = {
      {53, "UDP"}, {53, "TCP"}, {443, "TCP"},  // DNS, API server and AWS
      {port_of(config.signals.prometheus.url), "TCP"},
      {port_of(config.signals.rabbitmq.url), "TCP"},
  };
  for (const auto& w : want) EXPECT_EQ(egress.count(w), 1u) << w.first << "/" << w.second;
}

TEST(ManifestCopies, OverlayFilesEqualTheirOriginals) {
  // A kustomize generator cannot read outside its folder, so the policy and
  // daemon config are copies; keep them from drifting.
  const fs::path src = SourceDir();
  EXPECT_EQ(ReadFile(src / kOverlay / "gpuscaler.yaml"), ReadFile(src / "config/gpuscaler.yaml"));
  EXPECT_EQ(ReadFile(src / kOverlay / "policy.yaml"), ReadFile(src / "policies/training.yaml"));
  EXPECT_EQ(ReadFile(src / kBase / "policy.yaml"), ReadFile(src / "policies/training.yaml"));
  EXPECT_EQ(ReadFile(src / kGkeOverlay / "gpuscaler.yaml"), ReadFile(src / "config/gpuscaler-gcp.yaml"));
  EXPECT_EQ(ReadFile(src / kGkeOverlay / "policy.yaml"), ReadFile(src / "policies/training-gke.yaml"));
}

// The GKE overlay as an operator applies it: the base's objects, the
// service account bound to a Google service account (Workload Identity),
// egress to the GKE metadata server, and a daemon configuration with
// provider gcp whose pools all launch and whose policy is valid for the GCP
// catalog.
TEST_F(Manifests, GkeOverlayRendersWorkloadIdentityAndAGcpConfiguration) {
  const std::vector<YAML::Node> gke = Kustomize(kubectl_, SourceDir() / kGkeOverlay);
  ASSERT_FALSE(gke.empty());
  const YAML::Node sa = FindObject(gke, "ServiceAccount", "gpuscaler");
  ASSERT_TRUE(sa);
  EXPECT_EQ(Str(sa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]),
            "gpuscaler@my-gcp-project.iam.gserviceaccount.com");
  EXPECT_FALSE(sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]);
  EXPECT_TRUE(FindObject(gke, "Deployment", "gpuscaler"));
  EXPECT_NE(Str(Deployment(gke)["spec"]["template"]["spec"]["containers"][0]["image"]).find("docker.pkg.dev"),
            std::string::npos);
  for (const YAML::Node& o : gke) EXPECT_NE(Str(o["kind"]), "Secret");

  // Egress: the base's rules plus the metadata server.
  const YAML::Node md = FindObject(gke, "NetworkPolicy", "gpuscaler-gke-metadata");
  ASSERT_TRUE(md);
  std::set<std::pair<std::string, int>> allowed;
  for (const YAML::Node& rule : md["spec"]["egress"]) {
    for (const YAML::Node& to : rule["to"])
      for (const YAML::Node& p : rule["ports"]) allowed.insert({Str(to["ipBlock"]["cidr"]), p["port"].as<int>()});
  }
  EXPECT_EQ(allowed.count({"169.254.169.254/32", 80}), 1u);
  EXPECT_EQ(allowed.count({"169.254.169.252/32", 988}), 1u);
  for (const auto& kv : md["spec"]["podSelector"]["matchLabels"])
    EXPECT_EQ(Str(Deployment(gke)["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()]),
              kv.second.as<std::string>());

  const daemon::DaemonConfig config = RenderedDaemonConfig(gke);
  EXPECT_EQ(config.cloud.provider, "gcp");
  EXPECT_EQ(config.cloud.gcp.region, "us-central1");
  EXPECT_EQ(config.catalog_file, "/usr/share/gpuscaler/catalogs/gcp.yaml");
  const YAML::Node policy_map = FindObject(gke, "ConfigMap", "gpuscaler-policy");
  ASSERT_TRUE(policy_map);
  TempDir dir;
  WriteFile(dir.path() / "policy.yaml", Str(policy_map["data"]["policy.yaml"]));
  const CommandResult check =
      RunCommand({GPUSCALER_BINARY, "policy", "check", (dir.path() / "policy.yaml").string(), "--catalog",
                  (SourceDir() / "config/catalogs/gcp.yaml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const PolicyLoadResult policy = LoadPolicyFile((dir.path() / "policy.yaml").string());
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  daemon::DaemonConfig named = config;
  named.source_file = "gpuscaler.yaml";
  const Status launchable = daemon::CheckPoolsCanLaunch(named, policy.policy);
  EXPECT_TRUE(launchable.ok()) << (launchable.ok() ? "" : launchable.error().message());
}

// The AKS overlay: the base's objects, workload identity (the service
// account's client-id annotation, the pod's use label the webhook looks
// for), and a daemon configuration with provider azure whose pools all
// launch.
TEST_F(Manifests, AksOverlayRendersWorkloadIdentityAndAnAzureConfiguration) {
  const std::vector<YAML::Node> aks = Kustomize(kubectl_, SourceDir() / kAksOverlay);
  ASSERT_FALSE(aks.empty());
  const YAML::Node sa = FindObject(aks, "ServiceAccount", "gpuscaler");
  ASSERT_TRUE(sa);
  EXPECT_EQ(Str(sa["metadata"]["annotations"]["azure.workload.identity/client-id"]),
            "00000000-0000-0000-0000-000000000000");
  const YAML::Node pod = Deployment(aks)["spec"]["template"];
  EXPECT_EQ(Str(pod["metadata"]["labels"]["azure.workload.identity/use"]), "true");
  EXPECT_EQ(Str(pod["metadata"]["labels"]["app.kubernetes.io/name"]), "gpuscaler");  // the base's kept
  EXPECT_EQ(Str(pod["spec"]["serviceAccountName"]), "gpuscaler");
  for (const YAML::Node& o : aks) EXPECT_NE(Str(o["kind"]), "Secret");

  const daemon::DaemonConfig config = RenderedDaemonConfig(aks);
  EXPECT_EQ(config.cloud.provider, "azure");
  EXPECT_EQ(config.cloud.azure.driver, "aks");
  EXPECT_EQ(config.cloud.azure.location, "eastus");
  EXPECT_EQ(config.cloud.azure.credentials.kind, "auto");
  const YAML::Node policy_map = FindObject(aks, "ConfigMap", "gpuscaler-policy");
  ASSERT_TRUE(policy_map);
  TempDir dir;
  WriteFile(dir.path() / "policy.yaml", Str(policy_map["data"]["policy.yaml"]));
  EXPECT_EQ(config.catalog_file, "/usr/share/gpuscaler/catalogs/azure.yaml");
  const CommandResult check =
      RunCommand({GPUSCALER_BINARY, "policy", "check", (dir.path() / "policy.yaml").string(), "--catalog",
                  (SourceDir() / "config/catalogs/azure.yaml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const PolicyLoadResult policy = LoadPolicyFile((dir.path() / "policy.yaml").string());
  ASSERT_TRUE(policy.ok()) << policy.status().error().message();
  daemon::DaemonConfig named = config;
  named.source_file = "gpuscaler.yaml";
  const Status launchable = daemon::CheckPoolsCanLaunch(named, policy.policy);
  EXPECT_TRUE(launchable.ok()) << (launchable.ok() ? "" : launchable.error().message());
}

// The AKS overlay's node agent: a DaemonSet on the Spot nodes only (their
// label and taint, the GPU taints tolerated), running `gpuscaler
// node-agent` with its node's name, without the host's network, and a role
// that can read nodes and patch their status, nothing else.
TEST_F(Manifests, AksOverlayRunsTheNodeAgentOnSpotNodesWithLeastPrivilege) {
  const std::vector<YAML::Node> aks = Kustomize(kubectl_, SourceDir() / kAksOverlay);
  ASSERT_FALSE(aks.empty());
  const YAML::Node ds = FindObject(aks, "DaemonSet", "gpuscaler-node-agent");
  ASSERT_TRUE(ds);
  EXPECT_EQ(Str(ds["metadata"]["namespace"]), "gpuscaler");
  const YAML::Node spec = ds["spec"]["template"]["spec"];
  EXPECT_EQ(Str(spec["nodeSelector"]["kubernetes.azure.com/scalesetpriority"]), "spot");
  EXPECT_FALSE(spec["hostNetwork"] && spec["hostNetwork"].as<bool>()) << "IMDS is reachable from pods on AKS";
  std::set<std::string> tolerated;
  for (const YAML::Node& t : spec["tolerations"]) tolerated.insert(Str(t["key"]) + "=" + Str(t["value"]));
  EXPECT_EQ(tolerated.count("kubernetes.azure.com/scalesetpriority=spot"), 1u);
  EXPECT_EQ(tolerated.count("nvidia.com/gpu="), 1u);
  EXPECT_EQ(Str(spec["serviceAccountName"]), "gpuscaler-node-agent");
  const YAML::Node container = spec["containers"][0];
  std::vector<std::string> args;
  for (const YAML::Node& a : container["args"]) args.push_back(Str(a));
  EXPECT_NE(std::find(args.begin(), args.end(), "node-agent"), args.end());
  EXPECT_EQ(Str(container["env"][0]["name"]), "NODE_NAME");
  EXPECT_EQ(Str(container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"]), "spec.nodeName");

  const YAML::Node role = FindObject(aks, "ClusterRole", "gpuscaler-node-agent");
  ASSERT_TRUE(role);
  std::set<std::string> allowed;
  for (const YAML::Node& rule : role["rules"]) {
    for (const YAML::Node& r : rule["resources"]) {
      for (const YAML::Node& v : rule["verbs"]) allowed.insert(Str(r) + ":" + Str(v));
    }
  }
  EXPECT_EQ(allowed, (std::set<std::string>{"nodes:get", "nodes/status:patch"}));
  const YAML::Node binding = FindObject(aks, "ClusterRoleBinding", "gpuscaler-node-agent");
  ASSERT_TRUE(binding);
  EXPECT_EQ(Str(binding["subjects"][0]["name"]), "gpuscaler-node-agent");
  EXPECT_EQ(Str(binding["subjects"][0]["namespace"]), "gpuscaler");
}

TEST(DaemonConfigExample, LoadsWithTheDaemonsLoader) {
  Result<daemon::DaemonConfig> c = daemon::LoadDaemonConfig((SourceDir() / "config/gpuscaler.yaml").string());
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->policy_file, "/etc/gpuscaler/policy/policy.yaml");
  EXPECT_EQ(c->catalog_file, "/usr/share/gpuscaler/catalogs/aws.yaml");
  EXPECT_EQ(c->db_file, "/var/lib/gpuscaler/audit.db");
  EXPECT_EQ(c->listen, "0.0.0.0:8080");
  EXPECT_FALSE(c->dry_run);
  EXPECT_EQ(c->cloud.provider, "aws");
  EXPECT_EQ(c->cloud.launch_template, "gpu-nodes");
  EXPECT_EQ(c->cloud.subnets.size(), 3u);
  EXPECT_TRUE(c->kubernetes.enabled);
  EXPECT_TRUE(c->kubernetes.leader_election.enabled);
  EXPECT_EQ(c->signals.timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(c->retention, Seconds(90 * 86400));

  Result<daemon::DaemonConfig> base = daemon::LoadDaemonConfig((SourceDir() / kBase / "gpuscaler.yaml").string());
  ASSERT_TRUE(base.ok()) << base.error().message();
  EXPECT_TRUE(base->dry_run) << "the base alone never calls the cloud";
}

TEST(DaemonConfigExample, DocumentedExamplesLoad) {
  // Every ```yaml block of docs/daemon.md that is a DaemonConfig.
  const std::string doc = ReadFile(SourceDir() / "docs/daemon.md");
  int examples = 0;
  for (size_t pos = doc.find("```yaml\n"); pos != std::string::npos; pos = doc.find("```yaml\n", pos)) {
    const size_t start = pos + 8, end = doc.find("```", start);
    ASSERT_NE(end, std::string::npos);
    const std::string block = doc.substr(start, end - start);
    pos = end + 3;
    if (block.find("kind: DaemonConfig") == std::string::npos) continue;
    ++examples;
    Result<daemon::DaemonConfig> c = daemon::ParseDaemonConfig(block, "docs/daemon.md example");
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message());
  }
  EXPECT_GE(examples, 1);
}

// The sweep as an Indexed Job: one `gpuscaler sim sweep --shard I/N` per
// completion index, N equal to the Job's completions, and the N shards of its
// grid (with the volume's paths pointed at ../shared and this repository)
// covering every cell exactly once.
TEST(SweepJob, IsAnIndexedJobWhoseShardsCoverTheGridOnce) {
  GPUSCALER_REQUIRE_TOOL(kubectl, "kubectl");
  const std::vector<YAML::Node> objects = Kustomize(kubectl, SourceDir() / "config/kubernetes/sweep");
  const YAML::Node job = FindObject(objects, "Job", "gpuscaler-sweep");
  ASSERT_TRUE(job);
  EXPECT_EQ(Str(job["metadata"]["namespace"]), "gpuscaler-sweeps");
  const YAML::Node spec = job["spec"];
  EXPECT_EQ(Str(spec["completionMode"]), "Indexed");
  const int shards = spec["completions"].as<int>();
  EXPECT_EQ(spec["parallelism"].as<int>(), shards);
  EXPECT_GE(spec["backoffLimitPerIndex"].as<int>(), 1);
  const YAML::Node pod = spec["template"]["spec"];
  EXPECT_EQ(Str(pod["restartPolicy"]), "Never");  // what backoffLimitPerIndex requires
  const YAML::Node c = pod["containers"][0];
  const std::vector<std::string> args = c["args"].as<std::vector<std::string>>();
  const auto arg_after = [&](const std::string& flag) {
    auto it = std::find(args.begin(), args.end(), flag);
    return it != args.end() && it + 1 != args.end() ? *(it + 1) : std::string();
  };
  EXPECT_EQ(arg_after("--shard"), "$(SHARD_INDEX)/" + std::to_string(shards));
  bool index_from_annotation = false;
  for (const YAML::Node& e : c["env"]) {
    index_from_annotation |= Str(e["name"]) == "SHARD_INDEX" &&
                             Str(e["valueFrom"]["fieldRef"]["fieldPath"]) ==
                                 "metadata.annotations['batch.kubernetes.io/job-completion-index']";
  }
  EXPECT_TRUE(index_from_annotation);
  EXPECT_EQ(Str(c["securityContext"]["allowPrivilegeEscalation"]), "false");
  EXPECT_EQ(Str(pod["securityContext"]["runAsNonRoot"]), "true");

  const YAML::Node cm = FindObject(objects, "ConfigMap", "sweep-grid", /*hashed=*/true);
  ASSERT_TRUE(cm);
  EXPECT_EQ(fs::path(arg_after("--grid")).filename(), "grid.yaml");
  std::string grid = Str(cm["data"]["grid.yaml"]);
  if (!fs::is_directory(SharedDir() / "data")) GTEST_SKIP() << "no ../shared/data for the grid's inputs";
  const auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = grid.find(from); at != std::string::npos; at = grid.find(from, at + to.size())) {
      grid.replace(at, from.size(), to);
    }
  };
  replace_all("/data/traces/", (SharedDir() / "data/traces").string() + "/");
  replace_all("/data/prices/", (SharedDir() / "data/prices").string() + "/");
  replace_all("/data/catalogs/aws.yaml", (SourceDir() / "config/catalogs/aws.yaml").string());
  replace_all("/data/policies/sweep.yaml", (SourceDir() / "sim/testdata/policies/openb.yaml").string());
  TempDir dir;
  WriteFile(dir.path() / "grid.yaml", grid);
  std::multiset<std::string> cells;
  for (int i = 0; i < shards; ++i) {
    const CommandResult r = RunCommand({GPUSCALER_BINARY, "sim", "sweep", "--grid", (dir.path() / "grid.yaml").string(),
                                        "--out", (dir.path() / "out").string(), "--shard",
                                        std::to_string(i) + "/" + std::to_string(shards), "--list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_NE(line.find(" to run"), std::string::npos) << line;
      cells.insert(line.substr(0, line.find(' ')));
    }
  }
  EXPECT_EQ(cells.size(), 12u);  // 2 traces x 1 market x 3 policies x 2 seeds
  EXPECT_EQ(std::set<std::string>(cells.begin(), cells.end()).size(), cells.size()) << "a cell in two shards";
}

}  // namespace
}  // namespace gpuscaler::kube_test
