#!/usr/bin/env bash
# Installs dependencies, builds gpuscaler, and runs the main job on the
# embedded default: the built-in demo load through the controller and planner.
#
#   sudo ./scripts/demo.sh [extra gpuscaler sim arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpuscaler -j "$(nproc)"
exec ./build/release/gpuscaler sim --scenario demo --compare "$@"
