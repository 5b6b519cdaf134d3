// pugixml helpers for the AWS response parsers. Private to src/cloud.
#pragma once

#include <pugixml.hpp>

#include <string>
#include <string_view>

#include "gpuscaler/status.h"

namespace gpuscaler::cloud::xml {

// Parses `body` into `doc`; the root element must be `<{root}>` (any
// namespace). An AWS error document instead gives that error.
Status Load(pugi::xml_document& doc, std::string_view body, std::string_view root);

inline std::string Text(pugi::xml_node n, const char* child) { return n.child_value(child); }
int Int(pugi::xml_node n, const char* child, int fallback = 0);

}  // namespace gpuscaler::cloud::xml
