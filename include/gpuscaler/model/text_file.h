// Reading a whole file into memory: policies, catalogs, snapshots, traces.
#pragma once

#include <cstdint>
#include <string>

#include "gpuscaler/model/config_limits.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

// The file's bytes. On failure a kNotFound error whose message is only the
// OS's reason ("No such file or directory", "Is a directory"), so each caller
// can say what it was reading.
Result<std::string> ReadTextFile(const std::string& path);

// ReadTextFile for a configuration file (config_limits.h): the same, except
// that a file of more than `max_bytes` is refused before it is read (a
// regular file by its size; a pipe or device once `max_bytes` + 1 bytes have
// come) with a kConfig error that names the file, its size and the cap:
// "p.yaml is 5242880 bytes, more than the 4194304 bytes (4 MiB) a
// configuration file may have". Memory use is at most `max_bytes` + 64 KiB.
Result<std::string> ReadConfigFile(const std::string& path, uint64_t max_bytes = kMaxConfigFileBytes);

}  // namespace gpuscaler
