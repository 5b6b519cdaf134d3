#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test; ends with ctest's summary.
#
#   sudo ./scripts/test.sh           # release build (the README's test command)
#   sudo ./scripts/test.sh asan      # the same suite under ASan + UBSan
#   sudo ./scripts/test.sh tsan      # the tests labelled concurrency under TSan (builds only those)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./scripts/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)" --timeout 600
