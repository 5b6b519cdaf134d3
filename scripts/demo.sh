#!/usr/bin/env bash
# Installs dependencies, builds gpuscaler, and runs it on the embedded
# defaults: validates the example policies against the AWS catalog, then
# explains the plan the inference policy makes for a recorded snapshot.
# (When `gpuscaler sim --scenario demo` lands — issue 4 — this becomes the
# simulator's demo, and then the daemon against the simulated cloud.)
#
#   sudo ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpuscaler -j "$(nproc)"
bin=./build/release/gpuscaler
echo "== gpuscaler policy check policies/* --catalog config/catalogs/aws.yaml"
"$bin" policy check policies/* --catalog config/catalogs/aws.yaml
echo
echo "== gpuscaler explain --snapshot sim/testdata/explain/catalog_offerings.json --policy policies/inference.yaml"
exec "$bin" explain --snapshot sim/testdata/explain/catalog_offerings.json \
  --catalog config/catalogs/aws.yaml --region us-east-1 --policy policies/inference.yaml
