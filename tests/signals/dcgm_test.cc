#include "gpuscaler/signals/dcgm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "signals/test_files.h"

namespace gpuscaler::signals {
namespace {

std::vector<Sample> Parse(const std::string& text) {
  Result<Exposition> e = ParseExposition(text);
  EXPECT_TRUE(e.ok()) << e.error().ToString();
  return e.ok() ? e->samples : std::vector<Sample>{};
}

TEST(Dcgm, ReadsTheGpuOperatorCaptureWithPodLabels) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "dcgm/samples/gpu-operator-v25.10-rtx4000ada-k8s.prom");
  DcgmReadings got = ReadDcgm(Parse(text));
  ASSERT_EQ(got.nodes.size(), 1u);
  const NodeGpuReadings& node = got.nodes[0];
  EXPECT_EQ(node.hostname, "lke529760-766837-0a634ab30000");
  ASSERT_EQ(node.gpus.size(), 1u);
  EXPECT_TRUE(node.mig_instances.empty());
  const GpuReading& gpu = node.gpus[0];
  EXPECT_EQ(gpu.uuid, "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c");
  EXPECT_EQ(gpu.model_name, "NVIDIA RTX 4000 Ada Generation");
  ASSERT_TRUE(gpu.utilization.has_value());
  EXPECT_EQ(*gpu.utilization, 0.0);  // GPU_UTIL 0 is a real zero, preferred over GR_ENGINE_ACTIVE
  EXPECT_EQ(gpu.utilization_field, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(gpu.fb_used_mib, 1);
  EXPECT_EQ(gpu.fb_free_mib, 20015);
  EXPECT_EQ(gpu.pod, "cuda-75454ffb9f-8ljq7");
  EXPECT_EQ(gpu.pod_namespace, "default");
  EXPECT_EQ(gpu.container, "cuda");
  EXPECT_EQ(node.mean_utilization, 0.0);
  ASSERT_EQ(got.pods.size(), 1u);
  EXPECT_EQ(got.pods[0].pod, "cuda-75454ffb9f-8ljq7");
  EXPECT_EQ(got.pods[0].hostname, node.hostname);
  EXPECT_EQ(got.pods[0].gpus, 1);
  EXPECT_EQ(got.pods[0].fb_used_mib, 1);
  EXPECT_EQ(got.blank_values, 0);
}

TEST(Dcgm, ReadsMigInstancesSeparatelyFromTheWholeGpu) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "dcgm/samples/nvidia-docs-a100-mig.prom");
  DcgmReadings got = ReadDcgm(Parse(text));
  ASSERT_EQ(got.nodes.size(), 1u);
  const NodeGpuReadings& node = got.nodes[0];
  EXPECT_EQ(node.hostname, "ub20-a100-k8s");
  ASSERT_EQ(node.gpus.size(), 1u);
  ASSERT_EQ(node.mig_instances.size(), 1u);
  // No GPU_UTIL in this capture: the profiling ratio stands in.
  EXPECT_EQ(node.gpus[0].utilization_field, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  EXPECT_DOUBLE_EQ(*node.gpus[0].utilization, 0.995630);
  EXPECT_EQ(node.gpus[0].fb_used_mib, 4845);
  const GpuReading& mig = node.mig_instances[0];
  EXPECT_TRUE(mig.is_mig_instance());
  EXPECT_EQ(mig.mig_profile, "1g.5gb");
  EXPECT_EQ(mig.mig_instance_id, "13");
  EXPECT_DOUBLE_EQ(*mig.utilization, 0.995687);
  EXPECT_FALSE(mig.fb_used_mib.has_value());
  EXPECT_EQ(node.gpus_with_utilization, 1);
  EXPECT_DOUBLE_EQ(*node.mean_utilization, 0.995630);
  EXPECT_TRUE(got.pods.empty());
}

TEST(Dcgm, ReadsTheLowerCaseHostnameLabelAndEmptyLabels) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "dcgm/samples/dcgm-exporter-unit-test-expected.prom");
  std::vector<Sample> samples = Parse(text);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].LabelOr("hostname"), "testhost");
  EXPECT_EQ(samples[0].LabelOr("pci_bus_id", "absent"), "");
  samples[0].name = "DCGM_FI_DEV_GPU_UTIL";
  DcgmReadings got = ReadDcgm(samples);
  ASSERT_EQ(got.nodes.size(), 1u);
  EXPECT_EQ(got.nodes[0].hostname, "testhost");
  EXPECT_DOUBLE_EQ(*got.nodes[0].mean_utilization, 0.42);
}

TEST(Dcgm, ReadmeSnippetParsesLenientlyAndItsBlankReadsAsMissing) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "dcgm/samples/dcgm-exporter-readme-snippet.txt");
  // "curl ..." and "..." lines are not exposition lines.
  Exposition e = ParseExpositionLenient(text);
  EXPECT_EQ(e.skipped_lines, 3);
  ASSERT_EQ(e.samples.size(), 3u);
  EXPECT_EQ(e.samples[0].LabelOr("UUID"), "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52");  // ", UUID"
  EXPECT_TRUE(IsDcgmBlank(e.samples[2].value));
  EXPECT_FALSE(IsDcgmBlank(e.samples[1].value));
}

std::string Line(const std::string& name, const std::string& labels, const std::string& value) {
  return name + "{" + labels + "} " + value + "\n";
}

TEST(Dcgm, TreatsBlankAndOutOfRangeValuesAsMissingNeverZero) {
  struct Case {
    const char* util;
    const char* gr;
    std::optional<double> want;
    const char* field;
  } cases[] = {
      {"50", nullptr, 0.5, "DCGM_FI_DEV_GPU_UTIL"},
      {"100", nullptr, 1.0, "DCGM_FI_DEV_GPU_UTIL"},
      {"0", "0.9", 0.0, "DCGM_FI_DEV_GPU_UTIL"},
      {"9223372036854775794", "0.25", 0.25, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"},
      {"9223372036854775792", nullptr, std::nullopt, ""},
      {"9223372036854775807", nullptr, std::nullopt, ""},
      {"NaN", nullptr, std::nullopt, ""},
      {"-1", nullptr, std::nullopt, ""},
      {"101", nullptr, std::nullopt, ""},
      {"+Inf", "0.5", 0.5, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"},
      {nullptr, "1.5", std::nullopt, ""},
      {nullptr, nullptr, std::nullopt, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.util ? c.util : "-") + " / " + (c.gr ? c.gr : "-"));
    std::string labels = "gpu=\"0\",UUID=\"GPU-1\",Hostname=\"n1\"";
    std::string text = Line("DCGM_FI_DEV_FB_USED", labels, "10");
    if (c.util) text += Line("DCGM_FI_DEV_GPU_UTIL", labels, c.util);
    if (c.gr) text += Line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, c.gr);
    DcgmReadings got = ReadDcgm(Parse(text));
    ASSERT_EQ(got.nodes.size(), 1u);
    ASSERT_EQ(got.nodes[0].gpus.size(), 1u);
    EXPECT_EQ(got.nodes[0].gpus[0].utilization, c.want);
    EXPECT_EQ(got.nodes[0].gpus[0].utilization_field, c.field);
    EXPECT_EQ(got.nodes[0].mean_utilization, c.want);
  }
}

TEST(Dcgm, BlankFramebufferReadsAsMissing) {
  std::string labels = "gpu=\"0\",UUID=\"GPU-1\",Hostname=\"n1\"";
  DcgmReadings got = ReadDcgm(Parse(Line("DCGM_FI_DEV_FB_USED", labels, "9223372036854775794") +
                                    Line("DCGM_FI_DEV_FB_FREE", labels, "100")));
  EXPECT_FALSE(got.nodes[0].gpus[0].fb_used_mib.has_value());
  EXPECT_EQ(got.nodes[0].gpus[0].fb_free_mib, 100);
  EXPECT_EQ(got.blank_values, 1);
}

TEST(Dcgm, GroupsGpusPerNodeAndPodsAcrossLabelSpellings) {
  std::string text;
  text += Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"10\",UUID=\"GPU-b\",Hostname=\"n1\",pod=\"train\",namespace=\"ml\"", "80");
  text += Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"2\",UUID=\"GPU-a\",Hostname=\"n1\",pod=\"train\",namespace=\"ml\"", "40");
  text += Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"0\",UUID=\"GPU-c\",hostname=\"n2\",exported_pod=\"infer\","
               "exported_namespace=\"web\",exported_container=\"srv\"", "10");
  text += Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"1\",UUID=\"GPU-d\",hostname=\"n2\",pod_name=\"old\",pod_namespace=\"legacy\"",
               "30");
  text += Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"2\",UUID=\"GPU-e\",hostname=\"n2\",pod=\"\",namespace=\"\",container=\"\"",
               "9223372036854775794");
  text += Line("DCGM_FI_DEV_POWER_USAGE", "gpu=\"3\",UUID=\"GPU-f\",hostname=\"n2\"", "100");
  DcgmReadings got = ReadDcgm(Parse(text));
  ASSERT_EQ(got.nodes.size(), 2u);
  EXPECT_EQ(got.nodes[0].hostname, "n1");
  ASSERT_EQ(got.nodes[0].gpus.size(), 2u);
  EXPECT_EQ(got.nodes[0].gpus[0].gpu, "2");  // numeric order: 2 before 10
  EXPECT_EQ(got.nodes[0].gpus[1].gpu, "10");
  EXPECT_DOUBLE_EQ(*got.nodes[0].mean_utilization, 0.6);
  const NodeGpuReadings& n2 = got.nodes[1];
  ASSERT_EQ(n2.gpus.size(), 3u);  // the POWER_USAGE-only GPU is not read
  EXPECT_EQ(n2.gpus_with_utilization, 2);
  EXPECT_EQ(n2.gpus_without_utilization, 1);
  EXPECT_DOUBLE_EQ(*n2.mean_utilization, 0.2);
  ASSERT_EQ(got.pods.size(), 3u);
  EXPECT_EQ(got.pods[0].pod_namespace, "legacy");
  EXPECT_EQ(got.pods[1].pod_namespace, "ml");
  EXPECT_EQ(got.pods[1].gpus, 2);
  EXPECT_DOUBLE_EQ(*got.pods[1].mean_utilization, 0.6);
  EXPECT_EQ(got.pods[2].pod, "infer");
  EXPECT_EQ(got.pods[2].hostname, "n2");
  EXPECT_EQ(n2.gpus[0].container, "srv");
}

TEST(Dcgm, UsesMigInstancesWhenTheWholeGpuHasNoReading) {
  std::string text;
  text += Line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu=\"0\",UUID=\"GPU-1\",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"1\",Hostname=\"n\"", "0.2");
  text += Line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu=\"0\",UUID=\"GPU-1\",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"2\",Hostname=\"n\"", "0.6");
  text += Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"1\",UUID=\"GPU-2\",Hostname=\"n\"", "100");
  DcgmReadings got = ReadDcgm(Parse(text));
  ASSERT_EQ(got.nodes.size(), 1u);
  EXPECT_EQ(got.nodes[0].gpus.size(), 1u);
  EXPECT_EQ(got.nodes[0].mig_instances.size(), 2u);
  EXPECT_EQ(got.nodes[0].gpus_with_utilization, 2);  // GPU-1 via its instances (0.4), GPU-2 (1.0)
  EXPECT_DOUBLE_EQ(*got.nodes[0].mean_utilization, 0.7);
}

TEST(Dcgm, FallsBackToTheDefaultHostname) {
  DcgmReadings got = ReadDcgm(Parse(Line("DCGM_FI_DEV_GPU_UTIL", "gpu=\"0\"", "5")), {.default_hostname = "node-a"});
  ASSERT_EQ(got.nodes.size(), 1u);
  EXPECT_EQ(got.nodes[0].hostname, "node-a");
  EXPECT_EQ(got.nodes[0].gpus[0].gpu, "0");
}

}  // namespace
}  // namespace gpuscaler::signals
