#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test; when all pass, its
# last line is ctest's summary ("Total Test time (real) = ..."; the
# pass/fail count is printed just above it). When some fail, a digest
# follows: each failed test's first assertion messages, so that the end of
# a long log (all a CI page may keep) still says what failed and where.
#
#   ./scripts/test.sh           # release build (the README's test command)
#   ./scripts/test.sh asan      # the same suite under ASan + UBSan
#   ./scripts/test.sh tsan      # the tests labelled concurrency under TSan (builds only those)
#
# Root is needed only to install missing packages (scripts/setup.sh uses
# sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./scripts/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)" --timeout 600 ||
  { ./scripts/failure_digest.sh "build/$preset/Testing/Temporary/LastTest.log" || true; exit 8; }
