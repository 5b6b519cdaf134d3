#!/usr/bin/env bash
# The sweep's speed and its equality with single runs:
#   bench/sweep/run_sweep_bench.sh [BUILD_DIR]
# 1. the 24-cell grid with 1 worker, then with 2 workers (fresh directories),
#    wall times and their ratio;
# 2. every cell's result.json compared byte for byte with `gpuscaler sim --json`
#    run alone with the same inputs (the policy file with the cell's overrides
#    written out by the script);
# 3. a 2-worker sweep killed halfway and run again: only the missing cells run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build/release}"
bin="$build/gpuscaler"
shared="$(cd "$root/../shared" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed "s|SHARED|$shared|g" "$here/grid.yaml" > "$work/grid.yaml"
# Relative paths in the grid are read from the grid's folder.
sed -i "s|\.\./\.\./|$root/|g" "$work/grid.yaml"

timed() {  # prints wall seconds of the command
  local start=$EPOCHREALTIME
  "$@" > /dev/null 2> "$work/last.err" || { cat "$work/last.err" >&2; exit 1; }
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

one=$(timed "$bin" sim sweep --grid "$work/grid.yaml" --out "$work/w1" --workers 1)
two=$(timed "$bin" sim sweep --grid "$work/grid.yaml" --out "$work/w2" --workers 2)
echo "cells: $(ls "$work/w1/cells" | wc -l)"
echo "1 worker: ${one} s; 2 workers: ${two} s; ratio $(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.3f", b / a }')"

# Equality with the single runs.
mismatches=0
for cell in "$work"/w1/cells/*/; do
  id=$(basename "$cell")
  inputs=$(python3 -c "import json,sys; d=json.load(open('$cell/summary.json'))['inputs']; print(d['trace'], d['seed'], json.dumps(d['overrides']))")
  trace=$(echo "$inputs" | cut -d' ' -f1)
  seed=$(echo "$inputs" | cut -d' ' -f2)
  overrides=$(echo "$inputs" | cut -d' ' -f3-)
  python3 - "$root/sim/testdata/policies/openb.yaml" "$overrides" "$work/policy-$id.yaml" <<'PY'
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for path, value in json.loads(sys.argv[2]).items():
    node = doc
    keys = path.split('.')
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = yaml.safe_load(value)
yaml.safe_dump(doc, open(sys.argv[3], 'w'))
PY
  case "$trace" in
    demo) source_args=(--scenario demo) ;;
    openb) source_args=(--trace "$shared/data/traces/alibaba_gpu_v2023_openb_pods_primary.csv" --trace-format alibaba-openb) ;;
    helios) source_args=(--trace "$shared/data/traces/helios_earth_vc_minute_primary.csv" --trace-format helios-minute) ;;
  esac
  "$bin" sim "${source_args[@]}" --policy "$work/policy-$id.yaml" --catalog "$root/config/catalogs/aws.yaml" \
    --seed "$seed" --days 7 --json 2>/dev/null > "$work/single.json"
  # The policy's source file name is not part of the output; the results are.
  if ! cmp -s "$work/single.json" "$cell/result.json"; then
    echo "differs: $id"
    mismatches=$((mismatches + 1))
  fi
done
echo "cells differing from the single run: $mismatches"

# Kill halfway, run again.
"$bin" sim sweep --grid "$work/grid.yaml" --out "$work/k" --workers 2 > /dev/null 2>&1 &
pid=$!
while [ "$(ls "$work"/k/cells/*/summary.json 2>/dev/null | wc -l)" -lt 8 ]; do sleep 0.2; done
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
sleep 0.5
before=$(ls "$work"/k/cells/*/summary.json | wc -l)
"$bin" sim sweep --grid "$work/grid.yaml" --out "$work/k" --workers 2 2>"$work/k.err" >/dev/null; head -1 "$work/k.err"
echo "killed after $before cells; after the rerun: $(ls "$work"/k/cells/*/summary.json | wc -l) cells"
