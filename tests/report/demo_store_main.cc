// report_demo_store DIR CLUSTER: writes DIR/CLUSTER.db, the demo store of
// demo_stores.h (the setup tests of the report_demo_stores fixture run it).
// Exit 0 when written, 1 with the reason on stderr otherwise, 2 on bad usage.
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "report/demo_stores.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR CLUSTER\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const std::string cluster = argv[2];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "creating %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  const std::string path = (dir / (cluster + ".db")).string();
  const gpuscaler::Status written = gpuscaler::report::testing::WriteDemoStore(cluster, path);
  if (!written) {
    std::fprintf(stderr, "writing %s: %s\n", path.c_str(), written.error().ToString().c_str());
    return 1;
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
