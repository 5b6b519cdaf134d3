// The cloud.azure section of the daemon configuration (config.cc reads the
// rest of the file). Private to src/daemon.
#pragma once

#include <string>

#include "gpuscaler/daemon/config.h"
#include "gpuscaler/model/yaml_document.h"

namespace gpuscaler::daemon {

// Reads cloud.azure into `*out`, reporting every problem at its place.
void ReadAzureSection(DocReader& reader, const DocNode& node, AzureSettings* out);

// With provider azure: the problems ("\n<where>: <what>" each) of policy
// pools that cannot launch (no entry in cloud.azure.pools, an actuation
// other than fleet) and of cloud.azure.pools entries naming no policy pool.
std::string AzurePoolProblems(const DaemonConfig& config, const Policy& policy);

}  // namespace gpuscaler::daemon
