// Private to src/cloud: the WarmPoolConfiguration element, shared by the
// DescribeAutoScalingGroups and DescribeWarmPool parsers.
#pragma once

#include <optional>
#include <pugixml.hpp>

#include "gpuscaler/cloud/ec2_api.h"

namespace gpuscaler::cloud {

// The configuration `n` describes; none when `n` is empty (no warm pool).
std::optional<WarmPoolConfig> ParseWarmPoolConfiguration(pugi::xml_node n);

}  // namespace gpuscaler::cloud
