#!/usr/bin/env bash
# Installs everything gpuscaler needs to build and test on Debian 12, from
# Debian's own packages. Idempotent: when everything is present it only
# checks, and takes well under a second.
#
#   ./scripts/setup.sh               # build + test dependencies
#
# Only apt-get needs root: as root the script runs it directly; otherwise it
# runs it through sudo when sudo exists, and fails naming both ways out when
# neither is available. Set GPUSCALER_SKIP_APT=1 to only check.
set -euo pipefail

# Build and test dependencies, one per line with why.
packages=(
  build-essential        # g++ 12
  cmake                  # build
  ninja-build            # fast builds
  ccache                 # rebuilds in CI and on laptops
  lld                    # links the test executables in about half GNU ld's time (CMakeLists.txt uses it when present)
  pkg-config
  libboost1.81-dev       # Asio + Beast: HTTP server and clients, coroutines
  libboost-url1.81-dev   # Boost.URL (compiled part): URL parsing and percent-encoding in net/
  nlohmann-json3-dev     # JSON
  libsqlite3-dev         # audit store
  libpq-dev              # audit store on PostgreSQL (libpq's C API)
  postgresql-15          # tests only: the real PostgreSQL 15 every audit store test also runs on (tests/store/postgres_server.sh)
  libspdlog-dev          # logging
  libgtest-dev           # tests
  libgmock-dev
  libbenchmark-dev       # Google Benchmark
  libyaml-cpp-dev        # policy and catalog files
  libcli11-dev           # command line
  libpugixml-dev         # AWS XML responses
  libssl-dev             # TLS, SigV4 HMAC, SHA-256
  libzstd-dev            # audit store: compresses the planner snapshot kept with each decision
  libhowardhinnant-date-dev  # scaling schedules: cron times in the policy's IANA time zone (C++20 chrono without GCC 12's missing tzdb)
  tzdata                 # the time zone database those schedules read (/usr/share/zoneinfo)
  coinor-libcbc-dev      # bench only: exact MIP optimum for planner quality
  coinor-cbc             # bench/sim/fleet_packing_gap.py and its test: the cbc solver, for the cheapest fleet per instant
  zstd                   # the same script: decompresses the snapshots kept in the audit store
  python3                # catalog generation script, test helpers
  python3-kubernetes     # tests only: Kubernetes' own Python client writes and reads ProvisioningRequests on the fake API server
  prometheus             # promtool checks the PrometheusRule (tests/kube) and our /metrics text (tests/server); the 2.42 server runs the real-server signal tests
  chromium               # tests only: renders the HTML cost report headless (screenshot, DOM, JS errors)
  rabbitmq-server        # tests only: real RabbitMQ 3.10 + management API for the queue-depth collector tests
  clang-14               # fuzzing only (scripts/fuzz.sh): libFuzzer needs clang; gcc builds everything else
  libclang-rt-14-dev     # fuzzing only: the libFuzzer, ASan and UBSan runtimes for clang-14
  llvm-14                # fuzzing only: llvm-symbolizer, so sanitizer reports from fuzzing show file:line
  wrk                    # bench only: bench/load/run_load.sh drives >= 1,000 concurrent HTTP connections at the daemon
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# tests only: the aws CLI is the independent client of our EC2 emulator
# (tests/cloud/aws_cli_test.cc). Most machines here carry one already (pip's
# awscli v1); Debian's awscli v2 only when there is none on PATH.
if ! command -v aws >/dev/null 2>&1 && \
   ! dpkg-query -W -f='${Status}' awscli 2>/dev/null | grep -q "install ok installed"; then
  missing+=(awscli)
fi

# tests only: Google's Node.js client (googleapis) is the independent client
# of our Compute Engine emulator (tests/cloud/gcp_node_client_test.cc).
# Debian's nodejs (18) and npm when there is no node on PATH, and only with
# the source tree beside the script (not in the Dockerfile's dependency layer).
node_client_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/cloud/gcp_node_client"
if [ -f "$node_client_dir/package-lock.json" ] && ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

# Installs the pinned npm packages of a tests/cloud/*_node_client directory
# (its package-lock.json, `npm ci`) into a cache outside the source and build
# trees; skipped when that cache already holds this exact lock file.
#   install_npm_client <source dir> <cache dir> <package that marks it installed>
install_npm_client() {
  local src="$1" cache="$2" marker="$3"
  if [ ! -f "$src/package-lock.json" ]; then
    # The script without the source tree (the Dockerfile's dependency layer): no tests to serve.
    echo "setup: $src/package-lock.json not found; not installing its Node.js test client"
    return 0
  fi
  if cmp -s "$src/package-lock.json" "$cache/package-lock.json" && [ -f "$cache/node_modules/$marker/package.json" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm is not installed; cannot install $src" >&2
    return 1
  fi
  mkdir -p "$cache"
  cp "$src/package.json" "$src/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "setup: installed the npm packages of $src into $cache"
}

# Google's client (googleapis): $GPUSCALER_NODE_CACHE or
# ~/.cache/gpuscaler/gcp_node_client. Azure's SDKs (@azure/arm-containerservice,
# @azure/arm-compute), the independent client of our Azure emulator
# (tests/cloud/azure_node_client_test.cc): $GPUSCALER_AZURE_NODE_CACHE or
# ~/.cache/gpuscaler/azure_node_client.
install_node_client() {
  install_npm_client "$node_client_dir" \
    "${GPUSCALER_NODE_CACHE:-${HOME:-/root}/.cache/gpuscaler/gcp_node_client}" googleapis || return 1
  install_npm_client "$(dirname "$node_client_dir")/azure_node_client" \
    "${GPUSCALER_AZURE_NODE_CACHE:-${HOME:-/root}/.cache/gpuscaler/azure_node_client}" @azure/arm-compute
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  install_node_client
  exit 0
fi

echo "setup: missing: ${missing[*]}"
if [ "${GPUSCALER_SKIP_APT:-0}" = "1" ]; then
  echo "setup: GPUSCALER_SKIP_APT=1, not installing" >&2
  exit 1
fi
# Runs a command as root: directly when we are root (a container or a root
# shell often has no sudo), else through sudo.
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: installing packages needs root (apt-get) and sudo is not installed: run $0 as root" >&2
    exit 1
  fi
  as_root=(sudo)
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: installed ${#missing[@]} packages"
install_node_client
