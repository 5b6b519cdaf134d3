#include "clouds.h"

#include <iterator>

namespace gpuscaler::report::internal {
namespace {

constexpr CloudNames kClouds[] = {
    {"aws", "Amazon Web Services", "Amazon Elastic Compute Cloud"},
    {"gcp", "Google Cloud", "Compute Engine"},
    {"azure", "Microsoft", "Virtual Machines"},
};

// The names each provider shows for its regions (the AWS console's, Google
// Cloud's region locations, Azure's region display names). A region a catalog adds belongs here too: the
// report test checks every catalog region has a name.
constexpr RegionNames kRegions[] = {
    {"us-east-1", "US East (N. Virginia)", "aws"},
    {"us-west-2", "US West (Oregon)", "aws"},
    {"eu-west-1", "Europe (Ireland)", "aws"},
    {"us-central1", "Iowa", "gcp"},
    {"us-east1", "South Carolina", "gcp"},
    {"us-east4", "Northern Virginia", "gcp"},
    {"us-east5", "Columbus", "gcp"},
    {"us-south1", "Dallas", "gcp"},
    {"us-west1", "Oregon", "gcp"},
    {"us-west4", "Las Vegas", "gcp"},
    {"europe-west1", "Belgium", "gcp"},
    {"europe-west2", "London", "gcp"},
    {"europe-west4", "Netherlands", "gcp"},
    {"asia-east1", "Taiwan", "gcp"},
    {"asia-northeast1", "Tokyo", "gcp"},
    {"asia-southeast1", "Singapore", "gcp"},
    {"eastus", "East US", "azure"},
    {"eastus2", "East US 2", "azure"},
    {"southcentralus", "South Central US", "azure"},
    {"westus2", "West US 2", "azure"},
    {"westus3", "West US 3", "azure"},
};

}  // namespace

const CloudNames* FindCloud(std::string_view id) {
  for (const CloudNames& c : kClouds) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

const RegionNames* FindRegion(std::string_view id) {
  for (const RegionNames& r : kRegions) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

}  // namespace gpuscaler::report::internal
