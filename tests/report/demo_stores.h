// The simulated clusters the report tests read: the demo load replayed for
// kDemoStoreDays through the production controller (the `gpuscaler` run of
// `gpuscaler sim`) into an SQLite audit store, one store per cluster, each
// cluster its own seed.
//
// Writing one takes tens of seconds (minutes under a sanitizer), and ctest
// runs every test in a process of its own, so a suite that wrote them in its
// SetUpTestSuite paid for it once per test. ctest writes them once per run
// instead: the setup tests report_demo_store_<cluster> (fixture
// report_demo_stores, tests/report/CMakeLists.txt) write <cluster>.db into a
// directory of the build tree and the tests that require the fixture find it
// in GPUSCALER_DEMO_STORES. A test binary run by hand, without that variable,
// writes its own.
//
// The stores in that directory are shared by concurrent test processes: open
// them read-only, and change only copies.
#pragma once

#include <string>

#include "gpuscaler/status.h"
#include "sim/scenario.h"

namespace gpuscaler::report::testing {

inline constexpr int kDemoStoreDays = 2;

// The name of the environment variable naming the fixture's directory.
inline constexpr const char* kDemoStoresEnv = "GPUSCALER_DEMO_STORES";

// The scenario `cluster`'s store replays: the demo load with the cluster's
// seed ("east" 3, "west" 4), the default catalog, kDemoStoreDays. Another
// name: kNotFound.
Result<sim::Scenario> DemoStoreScenario(const std::string& cluster);

// Replays `cluster`'s scenario into a new audit store at `path`, replacing
// whatever is there. The store appears at `path` complete or not at all (it is
// written under another name and renamed), so a reader never sees half of
// one. Fails (kInternal, or the store's error) when the replay reports
// controller errors or the store cannot be written.
Status WriteDemoStore(const std::string& cluster, const std::string& path);

// The path of `cluster`'s store, <cluster>.db: in the directory named by
// GPUSCALER_DEMO_STORES when that is set (not there: kNotFound; it is never
// written here then, so a failed fixture cannot go unnoticed), else written
// now into `scratch_dir`.
Result<std::string> DemoStore(const std::string& cluster, const std::string& scratch_dir);

}  // namespace gpuscaler::report::testing
