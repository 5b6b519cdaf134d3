// In-cluster and kubeconfig configuration, and the client's token handling.
#include "gpuscaler/kube/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "gpuscaler/kube/client.h"
#include "gpuscaler/net/http_client.h"
#include "kube/kube_fixtures.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"

namespace gpuscaler::kube {
namespace {

using testing::FakeApiServer;
using testing::TempDir;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(InClusterConfig, ReadsTheServiceEnvironmentAndTheServiceAccountFiles) {
  TempDir dir;
  dir.Write("token", "tok-1\n");
  dir.Write("ca.crt", "-----BEGIN CERTIFICATE-----\n");
  dir.Write("namespace", "gpuscaler\n");
  Result<ClusterConfig> c =
      InClusterConfig(Env({{"KUBERNETES_SERVICE_HOST", "10.100.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
                      dir.path().string());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://10.100.0.1:443");
  EXPECT_EQ(c->token_file, (dir.path() / "token").string());
  EXPECT_TRUE(c->token.empty());  // read per request, never cached forever
  EXPECT_EQ(c->ca_file, (dir.path() / "ca.crt").string());
  EXPECT_EQ(c->namespace_name, "gpuscaler");

  Result<ClusterConfig> v6 =
      InClusterConfig(Env({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}),
                      dir.path().string());
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:6443");
}

TEST(InClusterConfig, OutsideAClusterOrWithoutAServiceAccountIsAConfigError) {
  TempDir dir;
  Result<ClusterConfig> none = InClusterConfig(Env({}), dir.path().string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().category(), ErrorCategory::kConfig);
  Result<ClusterConfig> no_files =
      InClusterConfig(Env({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
                      dir.path().string());
  ASSERT_FALSE(no_files.ok());
  EXPECT_EQ(no_files.error().category(), ErrorCategory::kConfig);
}

constexpr const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://prod.example:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
- name: lab-cluster
  cluster:
    server: https://lab.example:6443
    certificate-authority: certs/lab-ca.crt
users:
- name: robot
  user:
    token: abc.def
- name: admin
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: sso
  user:
    exec:
      command: aws
contexts:
- name: prod
  context:
    cluster: prod-cluster
    user: robot
    namespace: gpuscaler
- name: lab
  context:
    cluster: lab-cluster
    user: admin
- name: eks
  context:
    cluster: prod-cluster
    user: sso
)";

TEST(KubeconfigConfig, TakesTheCurrentContextOrANamedOne) {
  TempDir dir;
  const std::string path = dir.Write("config", kKubeconfig);
  Result<ClusterConfig> prod = KubeconfigConfig(path);
  ASSERT_TRUE(prod.ok()) << prod.error().ToString();
  EXPECT_EQ(prod->server, "https://prod.example:6443");
  EXPECT_EQ(prod->ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(prod->token, "abc.def");
  EXPECT_EQ(prod->namespace_name, "gpuscaler");

  Result<ClusterConfig> lab = KubeconfigConfig(path, "lab");
  ASSERT_TRUE(lab.ok()) << lab.error().ToString();
  EXPECT_EQ(lab->ca_file, (dir.path() / "certs/lab-ca.crt").string());
  EXPECT_EQ(lab->client_cert_pem, "cert");
  EXPECT_EQ(lab->client_key_pem, "key");
  EXPECT_EQ(lab->namespace_name, "default");
}

TEST(KubeconfigConfig, RejectsWhatItCannotUse) {
  TempDir dir;
  const std::string path = dir.Write("config", kKubeconfig);
  struct Case {
    std::string name;
    std::string context;
    std::string want;
  } cases[] = {{"exec plugin", "eks", "'exec' credential plugins are not supported"},
               {"unknown context", "nope", "context 'nope' not found"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<ClusterConfig> r = KubeconfigConfig(path, c.context);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().category(), ErrorCategory::kConfig);
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().message();
  }
  EXPECT_FALSE(KubeconfigConfig((dir.path() / "missing").string()).ok());
  const std::string bad = dir.Write("bad", "clusters: [unclosed");
  EXPECT_FALSE(KubeconfigConfig(bad).ok());
}

TEST(Base64Decode, DecodesPaddedUnpaddedAndWrappedTextAndRejectsGarbage) {
  EXPECT_EQ(Base64Decode("Zm9vYmFy"), "foobar");
  EXPECT_EQ(Base64Decode("Zm9vYg=="), "foob");
  EXPECT_EQ(Base64Decode("Zm9vYg"), "foob");
  EXPECT_EQ(Base64Decode("Zm9v\nYmFy"), "foobar");
  EXPECT_EQ(Base64Decode("Zm9v!"), std::nullopt);
  EXPECT_EQ(Base64Decode("Zg=x"), std::nullopt);
}

// The kubelet rotates the projected token in place: the client must send
// the new one without being rebuilt.
TEST(ApiClient, ReadsTheTokenFileAgainWhenItChanges) {
  FakeApiServer server;
  TempDir dir;
  const std::string token_file = dir.Write("token", "first\n");
  ClusterConfig config = testing::FakeClusterConfig(server);
  config.token_file = token_file;
  ApiClient client(config);
  server.RequireToken("first");
  Result<ApiResponse> r = client.Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 200);

  dir.Write("token", "second-longer\n");  // a new size: seen even within one mtime tick
  server.RequireToken("second-longer");
  r = client.Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(server.calls().back().authorization, "Bearer second-longer");

  server.RequireToken("third");
  r = client.Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(ApiError(*r, "list nodes").category(), ErrorCategory::kAuth);

  std::filesystem::remove(token_file);
  Result<ApiResponse> gone = client.Get("/api/v1/nodes");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().category(), ErrorCategory::kAuth);
}

TEST(ApiClient, TrustsTheClustersCaGivenAsPemText) {
  const testing::TestPki pki = testing::MakeTestPki({"localhost"}, {"127.0.0.1"});
  testing::FixtureHttpServer server(
      [](const testing::FixtureRequest&) {
        testing::FixtureResponse r;
        r.content_type = "application/json";
        r.body = R"({"kind":"NodeList","items":[]})";
        return r;
      },
      testing::FixtureTls{pki.server_cert_pem, pki.server_key_pem});
  ClusterConfig config;
  config.server = server.url();
  config.ca_pem = pki.ca_cert_pem;
  ApiClient client(config);
  Result<ApiResponse> r = client.Get("/api/v1/nodes");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 200);

  config.ca_pem = "not a certificate";
  ApiClient broken(config);
  Result<ApiResponse> bad = broken.Get("/api/v1/nodes");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().category(), ErrorCategory::kConfig);
}

TEST(ApiError, MapsStatusCodesToCategoriesWithTheApisMessage) {
  const ApiResponse conflict{409, testing::StatusObject(409, "Conflict", "the object has been modified").dump()};
  Error e = ApiError(conflict, "update lease");
  EXPECT_EQ(e.category(), ErrorCategory::kTransient);
  EXPECT_EQ(e.message(), "update lease: HTTP 409: the object has been modified");
  EXPECT_EQ(ApiError({429, ""}, "x").category(), ErrorCategory::kThrottled);
  EXPECT_EQ(ApiError({404, ""}, "x").category(), ErrorCategory::kNotFound);
  EXPECT_EQ(ApiError({403, ""}, "x").category(), ErrorCategory::kAuth);
}

}  // namespace
}  // namespace gpuscaler::kube
