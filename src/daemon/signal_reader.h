// The live engine's SignalReader: every class's queue-depth and GPU
// utilisation queries (policy `signals`), read concurrently from the sources
// in the daemon configuration, each with a deadline, and judged for
// freshness against the policy. Private to src/daemon.
#pragma once

#include "gpuscaler/daemon/config.h"
#include "gpuscaler/daemon/engine.h"

namespace gpuscaler::daemon {

// kConfig when a credentials file named in `settings` cannot be read.
Result<SignalReader> MakeSignalReader(const SignalSettings& settings);

// Prometheus query_range for the forecasts' warm-up (LiveEngineParts::
// read_history); other sources have no history: kNotFound. kConfig as above.
Result<HistoryReader> MakeHistoryReader(const SignalSettings& settings);

}  // namespace gpuscaler::daemon
