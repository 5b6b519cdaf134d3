// The clouds FOCUS rows name, and the display names of their regions.
// Private to src/report.
#pragma once

#include <string_view>

namespace gpuscaler::report::internal {

struct CloudNames {
  std::string_view id;        // as catalogs and runs name the cloud: "aws", "gcp", "azure"
  std::string_view provider;  // FOCUS ProviderName, PublisherName and InvoiceIssuerName
  std::string_view service;   // FOCUS ServiceName of its virtual machines
};

// The cloud named `id`; nullptr for one this table does not know.
const CloudNames* FindCloud(std::string_view id);

// A region the table knows: the regions of the catalogs in config/catalogs/.
struct RegionNames {
  std::string_view id;    // "us-east-1", "us-central1"
  std::string_view name;  // the provider's display name: "US East (N. Virginia)", "Iowa"
  std::string_view cloud;  // CloudNames::id
};

// The region `id`; nullptr for one the table does not know.
const RegionNames* FindRegion(std::string_view id);

}  // namespace gpuscaler::report::internal
