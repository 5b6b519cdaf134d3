#!/usr/bin/env bash
# Installs dependencies, builds gpuscaler, and runs the daemon on its embedded
# default: the built-in demo load (diurnal inference plus bursty training,
# spot prices and interruptions) through the production controller against
# the simulated cloud, 60x faster than real time, with the dashboard on
# http://127.0.0.1:8080/ . Stop it with Ctrl-C (it finishes the tick in
# flight and exits 0). The audit database it writes is reported on start;
# `gpuscaler report --db <it> ...` works on it.
#
#   sudo ./scripts/demo.sh                  # dashboard on 127.0.0.1:8080
#   LISTEN=0.0.0.0:9000 SPEED=600 sudo -E ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpuscaler -j "$(nproc)"
listen="${LISTEN:-127.0.0.1:8080}"
echo
echo "== gpuscaler run --demo: dashboard on http://${listen}/  (metrics /metrics, API /api/v1/status, reports /reports)"
exec ./build/release/gpuscaler run --demo --listen "$listen" --speed "${SPEED:-60}"
