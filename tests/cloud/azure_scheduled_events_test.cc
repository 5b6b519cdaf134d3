// The Instance Metadata Service's scheduled events document as a node reads
// it (cloud/azure_scheduled_events.h), in the shape Azure documents.
#include "gpuscaler/cloud/azure_scheduled_events.h"

#include <gtest/gtest.h>

namespace gpuscaler::cloud::azure_scheduled_events_test {
namespace {

WallTime EventsAt(const char* text) {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339(text, &t)) << text;
  return t;
}

TEST(AzureScheduledEvents, ReadsAPreemptAndAStartedEvent) {
  const char* doc = R"({"DocumentIncarnation": 3, "Events": [
    {"EventId": "602d9444-d2cd-49c7-8624-8643e7171297", "EventStatus": "Scheduled", "EventType": "Preempt",
     "ResourceType": "VirtualMachine", "Resources": ["aks-gpuspot-12345678-vmss_3"],
     "NotBefore": "Mon, 07 Dec 2026 17:30:00 GMT", "Description": "", "EventSource": "Platform",
     "DurationInSeconds": -1},
    {"EventId": "e-2", "EventStatus": "Started", "EventType": "Reboot", "ResourceType": "VirtualMachine",
     "Resources": ["a_1", "a_2"], "NotBefore": "", "EventSource": "User", "DurationInSeconds": 15}]})";
  Result<std::vector<AzureScheduledEvent>> events = ParseAzureScheduledEvents(doc);
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  ASSERT_EQ(events->size(), 2u);
  const AzureScheduledEvent& preempt = (*events)[0];
  EXPECT_EQ(preempt.event_id, "602d9444-d2cd-49c7-8624-8643e7171297");
  EXPECT_EQ(preempt.event_type, "Preempt");
  EXPECT_EQ(preempt.event_status, "Scheduled");
  EXPECT_EQ(preempt.resources, std::vector<std::string>{"aks-gpuspot-12345678-vmss_3"});
  ASSERT_TRUE(preempt.not_before.has_value());
  EXPECT_EQ(*preempt.not_before, EventsAt("2026-12-07T17:30:00Z"));
  EXPECT_EQ((*events)[1].resources.size(), 2u);
  EXPECT_FALSE((*events)[1].not_before.has_value());
}

TEST(AzureScheduledEvents, AnEmptyDocumentHasNoEventsAndOtherShapesAreErrors) {
  Result<std::vector<AzureScheduledEvent>> none =
      ParseAzureScheduledEvents(R"({"DocumentIncarnation":1,"Events":[]})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  for (const char* bad : {"", "[]", R"({"Events": {}})", R"({"Events": [1]})", "not json"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseAzureScheduledEvents(bad).ok());
  }
}

TEST(AzureScheduledEvents, ReadsRfc1123TimesOnly) {
  EXPECT_EQ(ParseRfc1123Time("Mon, 19 Sep 2016 18:29:47 GMT"), EventsAt("2016-09-19T18:29:47Z"));
  EXPECT_EQ(ParseRfc1123Time("Thu, 29 Feb 2024 00:00:00 GMT"), EventsAt("2024-02-29T00:00:00Z"));
  for (const char* bad :
       {"", "2026-12-07T17:30:00Z", "Mon, 07 Foo 2026 17:30:00 GMT", "Mon, 31 Feb 2026 17:30:00 GMT",
        "Mon, 07 Dec 2026 25:30:00 GMT", "Mon, 07 Dec 2026 17:30:00 PST"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseRfc1123Time(bad).has_value());
  }
}

TEST(AzureScheduledEvents, AScaleSetNodeNameGivesItsVmName) {
  EXPECT_EQ(AzureVmNameOfComputerName("aks-gpuspot-12345678-vmss00000a"), "aks-gpuspot-12345678-vmss_10");
  EXPECT_EQ(AzureVmNameOfComputerName("gpua000001"), "gpua_1");
  EXPECT_FALSE(AzureVmNameOfComputerName("node-1").has_value());
  EXPECT_FALSE(AzureVmNameOfComputerName("00000a").has_value());
}

}  // namespace
}  // namespace gpuscaler::cloud::azure_scheduled_events_test
