// HttpServer's HTTPS mode with a self-signed identity: a client that trusts
// the certificate gets answers (keep-alive and the router as over HTTP), one
// that does not is refused in the handshake, and an unusable certificate or
// key fails Start.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <thread>

#include "gpuscaler/net/http_client.h"
#include "gpuscaler/server/http_server.h"
#include "gpuscaler/server/tls_identity.h"

namespace gpuscaler::https_server_test {
namespace {

using namespace std::chrono_literals;

class HttpsServerTest : public ::testing::Test {
 protected:
  ~HttpsServerTest() override {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] {
      server_->Stop();
      io_.stop();
    });
    thread_.join();
  }
  Status Start(const server::TlsIdentity& identity) {
    server::HttpServerOptions o;
    o.port = 0;
    o.tls_certificate_pem = identity.certificate_pem;
    o.tls_private_key_pem = identity.private_key_pem;
    server::Router router;
    router.Get("/hello", [](const server::HttpRequest& r) { return server::HttpResponse::Text("hi " + r.Param("n")); });
    server_ = std::make_unique<server::HttpServer>(io_, o, std::move(router));
    Status s = server_->Start();
    if (s.ok()) thread_ = std::thread([this] { io_.run(); });
    return s;
  }
  std::string Url(const std::string& path) const { return "https://127.0.0.1:" + std::to_string(server_->port()) + path; }

  boost::asio::io_context io_{1};
  std::unique_ptr<server::HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpsServerTest, ATrustingClientIsAnsweredAndAStrangerIsRefused) {
  auto identity = server::MakeSelfSignedTlsIdentity({"localhost"}, {"127.0.0.1"});
  ASSERT_TRUE(identity.ok()) << identity.error().ToString();
  EXPECT_NE(identity->certificate_pem.find("-----BEGIN CERTIFICATE-----"), std::string::npos);
  ASSERT_TRUE(Start(*identity).ok());
  net::HttpClientOptions trusting;
  trusting.ca_pem = identity->certificate_pem;
  for (const char* n : {"a", "b"}) {
    auto r = net::Fetch(net::HttpRequest{"GET", Url(std::string("/hello?n=") + n), {}, ""}, trusting);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::string("hi ") + n);
  }
  auto missing = net::Fetch(net::HttpRequest{"GET", Url("/nothing"), {}, ""}, trusting);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);

  // Another self-signed certificate is not this one: verification fails.
  auto other = server::MakeSelfSignedTlsIdentity({"localhost"}, {"127.0.0.1"});
  ASSERT_TRUE(other.ok());
  net::HttpClientOptions stranger;
  stranger.ca_pem = other->certificate_pem;
  stranger.timeout = 3s;
  auto refused = net::Fetch(net::HttpRequest{"GET", Url("/hello"), {}, ""}, stranger);
  EXPECT_FALSE(refused.ok());
}

TEST_F(HttpsServerTest, AnUnusableIdentityFailsStart) {
  auto a = server::MakeSelfSignedTlsIdentity({"localhost"}, {});
  auto b = server::MakeSelfSignedTlsIdentity({}, {"127.0.0.1"});
  ASSERT_TRUE(a.ok() && b.ok());
  Status garbage = Start(server::TlsIdentity{"not a certificate", a->private_key_pem});
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(garbage.error().message().find("TLS certificate"), std::string::npos);
  server_.reset();
  Status mismatched = Start(server::TlsIdentity{a->certificate_pem, b->private_key_pem});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.error().category(), ErrorCategory::kConfig);
  EXPECT_FALSE(server::MakeSelfSignedTlsIdentity({}, {"not-an-ip"}).ok());
}

}  // namespace
}  // namespace gpuscaler::https_server_test
