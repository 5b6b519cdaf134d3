// The Instance Metadata Service's scheduled events as a VM reads them
// (GET http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01
// with the header Metadata: true): the ~30 s Spot eviction notice (Preempt)
// and other platform events. IMDS answers only the VM itself, so this is
// read on the node (`gpuscaler node-agent`), never by the daemon.
// Thread-safe: free functions on values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

inline constexpr const char* kAzureScheduledEventsPath = "/metadata/scheduledevents?api-version=2020-07-01";

struct AzureScheduledEvent {
  std::string event_id;
  std::string event_type;              // Preempt, Terminate, Reboot, Redeploy, Freeze, …
  std::string event_status;            // Scheduled, Started
  std::vector<std::string> resources;  // the VMs' names ("{scale set}_{instance id}")
  std::optional<WallTime> not_before;  // none once Started (IMDS sends "")
};

// The document's Events. kInvalidInput when it is not the document's shape;
// an event with an unreadable NotBefore keeps none.
Result<std::vector<AzureScheduledEvent>> ParseAzureScheduledEvents(std::string_view body);

// "Mon, 07 Dec 2026 17:30:00 GMT" (RFC 1123, as IMDS writes NotBefore).
std::optional<WallTime> ParseRfc1123Time(std::string_view text);

// The VM name IMDS lists in Resources for a Uniform scale set VM whose
// computer name (its node name) is the scale set's name and six base-36
// digits: "aks-gpu-12345678-vmss00000a" -> "aks-gpu-12345678-vmss_10".
// AKS names its machines so; nullopt for names of another shape.
std::optional<std::string> AzureVmNameOfComputerName(std::string_view computer_name);

}  // namespace gpuscaler::cloud
