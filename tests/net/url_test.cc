#include "gpuscaler/net/url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscaler::net {
namespace {

TEST(ParseUrl, SplitsSchemeHostPortAndTarget) {
  struct Case {
    std::string url;
    std::string scheme, host, target, host_header;
    uint16_t port;
  };
  const std::vector<Case> cases = {
      {"http://prometheus:9090/api/v1/query?query=up", "http", "prometheus", "/api/v1/query?query=up",
       "prometheus:9090", 9090},
      {"http://rabbit", "http", "rabbit", "/", "rabbit", 80},
      {"https://prom.example.com/", "https", "prom.example.com", "/", "prom.example.com", 443},
      {"HTTPS://prom.example.com:8443?x=1#frag", "https", "prom.example.com", "/?x=1", "prom.example.com:8443",
       8443},
      {"http://127.0.0.1:15672/api/queues/%2F/celery", "http", "127.0.0.1", "/api/queues/%2F/celery",
       "127.0.0.1:15672", 15672},
      {"http://[::1]:9400/metrics", "http", "::1", "/metrics", "[::1]:9400", 9400},
      {"http://host/?", "http", "host", "/?", "host", 80},
      {"http://h/a%20b?q=x%2By&r", "http", "h", "/a%20b?q=x%2By&r", "h", 80},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    Result<Url> u = ParseUrl(c.url);
    ASSERT_TRUE(u.ok()) << u.error().ToString();
    EXPECT_EQ(u->scheme, c.scheme);
    EXPECT_EQ(u->host, c.host);
    EXPECT_EQ(u->port, c.port);
    EXPECT_EQ(u->target, c.target);
    EXPECT_EQ(u->HostHeader(), c.host_header);
  }
}

TEST(ParseUrl, RejectsWhatItCannotFetchAsConfigErrors) {
  for (const std::string url : {"", "prometheus:9090", "ftp://host/x", "http://", "http://:80/", "http://host:0/",
                                "http://host:65536/", "http://host:12ab/", "http://[::1/", "http://ho st/",
                                "http://host/a b"}) {
    SCOPED_TRACE(url);
    Result<Url> u = ParseUrl(url);
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.error().category(), ErrorCategory::kConfig);
  }
}

TEST(ParseUrl, CredentialsInTheUrlAreRejectedWithoutRepeatingThem) {
  Result<Url> u = ParseUrl("http://guest:planted-secret-7d1f@rabbit:15672/api/overview");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(u.error().ToString().find("planted-secret-7d1f"), std::string::npos) << u.error().ToString();
}

TEST(ParseUrl, SaysWhatIsWrong) {
  struct Case {
    std::string url, want;
  };
  const std::vector<Case> cases = {
      {"127.0.0.1:9090", "expected http://host[:port]/path"},
      {"prometheus:9090", "scheme 'prometheus' is not supported"},
      {"ftp://host/x", "scheme 'ftp' is not supported"},
      {"http://:80/", "'http://:80/' has no host"},
      {"http://ho!st/", "bad host name"},
      {"http://[v1.x]/", "only IPv6 literals"},
      {"http://host:0/", "bad port"},
      {"http://host:65536/", "bad port"},
      {"http://host:12ab/", "bad port"},
      {"http://ho st/", "'http://ho st/': unencoded blank, control or non-ASCII byte at offset 9"},
      {"http://host/a\tb", "unencoded blank, control or non-ASCII byte at offset 13"},
      {"http://host/a{b}", "unexpected '{' at offset 13"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    Result<Url> u = ParseUrl(c.url);
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.error().category(), ErrorCategory::kConfig);
    EXPECT_NE(u.error().message().find(c.want), std::string::npos) << u.error().message();
  }
}

TEST(ParseUrl, AMalformedUrlWithCredentialsIsNotRepeatedEither) {
  Result<Url> u = ParseUrl("http://guest:planted secret@rabbit:15672/");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(u.error().message().find("planted"), std::string::npos) << u.error().message();
}

TEST(PercentEncode, KeepsUnreservedCharactersAndEncodesEveryOtherByte) {
  struct Case {
    std::string in, want;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"AZaz09-._~", "AZaz09-._~"},
      {"a-b_c.d~e+f&g", "a-b_c.d~e%2Bf%26g"},
      {"/team a", "%2Fteam%20a"},
      {"100%", "100%25"},
      {"spec.nodeName=node-1", "spec.nodeName%3Dnode-1"},
      {"\xc3\xbc", "%C3%BC"},
      {std::string("\0\x7f", 2), "%00%7F"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    EXPECT_EQ(PercentEncode(c.in), c.want);
  }
}

}  // namespace
}  // namespace gpuscaler::net
