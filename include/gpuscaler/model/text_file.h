// Reading a whole file into memory: policies, catalogs, snapshots, traces.
#pragma once

#include <string>

#include "gpuscaler/status.h"

namespace gpuscaler {

// The file's bytes. On failure a kNotFound error whose message is only the
// OS's reason ("No such file or directory", "Is a directory"), so each caller
// can say what it was reading.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace gpuscaler
