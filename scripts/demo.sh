#!/usr/bin/env bash
# Installs dependencies, builds gpuscaler, and runs the daemon on its embedded
# default: the built-in demo load (diurnal inference plus bursty training,
# spot prices and interruptions) through the production controller against
# the simulated cloud, 60x faster than real time, with the dashboard on
# http://127.0.0.1:8080/ . Stop it with Ctrl-C (it finishes the tick in
# flight, logs "gpuscaler stopped" and exits 0). Each run writes a fresh
# audit database, named in its start-up line;
# `build/release/gpuscaler report --db <it> ...` works on it.
#
# Root is needed only to install missing packages (scripts/setup.sh uses
# sudo when not root). The first build compiles everything the binary needs:
# about 8 minutes on 2 cores; later ones are incremental.
#
#   ./scripts/demo.sh                       # dashboard on 127.0.0.1:8080
#   LISTEN=0.0.0.0:9000 SPEED=600 ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpuscaler -j "$(nproc)"
listen="${LISTEN:-127.0.0.1:8080}"
echo
echo "== gpuscaler run --demo: dashboard on http://${listen}/  (metrics /metrics, API /api/v1/status, reports /reports)"
exec ./build/release/gpuscaler run --demo --listen "$listen" --speed "${SPEED:-60}"
