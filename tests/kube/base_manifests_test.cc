// The Kubernetes manifests as an operator gets them: `kubectl kustomize
// config/kubernetes` (and the base alone) rendered, then the objects checked
// for least privilege, pod hardening, probes on real endpoints, a hot-reloadable
// policy mount, egress to what the daemon calls, and agreement with the daemon
// configuration they ship; the overlays' copies of the policy and
// configuration equal their originals.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gpuscaler/daemon/config.h"
#include "kube/manifests_fixture.h"
#include "kube/tools.h"

namespace gpuscaler::kube_test::base_manifests_test {
namespace {

namespace fs = std::filesystem;
using manifests_testing::kBase;
using manifests_testing::kGkeOverlay;
using manifests_testing::Manifests;
using manifests_testing::Str;

const fs::path kOverlay = "config/kubernetes/overlays/eks-example";

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

}  // namespace
}  // namespace gpuscaler::kube_test::base_manifests_test
