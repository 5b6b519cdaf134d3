// The catalog gpuscaler uses when none is configured.
#pragma once

#include <string>

#include "gpuscaler/model/catalog.h"

namespace gpuscaler {

// The built-in catalog: real AWS us-east-1 on-demand and typical spot prices
// for g5, g6, p4d and p5 types.
Catalog BuiltinCatalog();
// config/catalogs/aws.yaml if found at `source_dir` or from the working
// directory upwards, else BuiltinCatalog(); `*source` says which.
Catalog DefaultCatalog(const std::string& source_dir, std::string* source);

}  // namespace gpuscaler
