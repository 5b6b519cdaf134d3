// GcpProvider's names: label values, instance names, request ids and machine
// families, each valid where Compute Engine takes it and the same every time.
#include <gtest/gtest.h>

#include <string>

#include "gpuscaler/cloud/gcp_provider.h"
#include "tests/cloud/gcp_provider_fixture.h"

namespace gpuscaler::cloud::gcp_provider_names_test {
namespace {

using gcp_provider_testing::IsVersion5Uuid;

// Plain character checks: <regex> draws GCC 12's -Wmaybe-uninitialized in
// the -O1 sanitizer build.
bool IsLabelValue(const std::string& v) {
  if (v.size() > 63) return false;
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// RFC 1035 label: [a-z]([-a-z0-9]{0,61}[a-z0-9])?
bool IsRfc1035Name(const std::string& v) {
  if (v.empty() || v.size() > 63 || !(v.front() >= 'a' && v.front() <= 'z')) return false;
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return v.back() != '-';
}

TEST(GcpNames, LabelValuesAreValidAndDeterministic) {
  EXPECT_EQ(GcpProvider::LabelValue("prod"), "prod");
  EXPECT_EQ(GcpProvider::LabelValue("gpu_a100-spot"), "gpu_a100-spot");
  const std::string upper = GcpProvider::LabelValue("Prod");
  EXPECT_TRUE(IsLabelValue(upper)) << upper;
  EXPECT_TRUE(upper.starts_with("prod-")) << upper;
  EXPECT_NE(upper, "prod");  // two names never share a label
  EXPECT_NE(GcpProvider::LabelValue("a.b"), GcpProvider::LabelValue("a/b"));
  const std::string long_name(100, 'x');
  const std::string cut = GcpProvider::LabelValue(long_name);
  EXPECT_EQ(cut.size(), 63u);
  EXPECT_TRUE(IsLabelValue(cut));
  EXPECT_NE(cut, GcpProvider::LabelValue(long_name + "y"));
  EXPECT_EQ(GcpProvider::LabelValue("Prod"), upper);
}

TEST(GcpNames, InstanceNamesRequestIdsAndFamilies) {
  const std::string token = "prod-8c1d6f0e-4a59-4c4e-9d5b-13d1c0f3a8e2-d1234-l0";
  const std::string n0 = GcpProvider::InstanceName("prod", token, 0);
  EXPECT_EQ(n0, "gs-prod-" + GcpProvider::IntentHash(token) + "-0");
  EXPECT_TRUE(IsRfc1035Name(n0));
  EXPECT_NE(n0, GcpProvider::InstanceName("prod", token + "x", 0));
  EXPECT_NE(n0, GcpProvider::InstanceName("prod", token, 1));
  const std::string odd = GcpProvider::InstanceName("My_Very_Long_Cluster_Name_For_Tests", token, 117);
  EXPECT_TRUE(IsRfc1035Name(odd)) << odd;
  EXPECT_LE(odd.size(), 63u);

  const std::string id = GcpProvider::RequestId("seed");
  EXPECT_TRUE(IsVersion5Uuid(id)) << id;
  EXPECT_EQ(id, GcpProvider::RequestId("seed"));
  EXPECT_NE(id, GcpProvider::RequestId("seed2"));

  EXPECT_EQ(GcpProvider::MachineFamily("a2-highgpu-1g"), "a2-highgpu");
  EXPECT_EQ(GcpProvider::MachineFamily("g2-standard-8"), "g2-standard");
  EXPECT_EQ(GcpProvider::MachineFamily("a3-megagpu-8g"), "a3-megagpu");
}

}  // namespace
}  // namespace gpuscaler::cloud::gcp_provider_names_test
