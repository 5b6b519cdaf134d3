#!/usr/bin/env bash
# GPUSCALER_UNITY_BUILD (CMakeLists.txt, README "Presets"): on by default,
# each target's sources compile in unity batches; OFF compiles file by file.
# Configures the tree both ways (no build) and reads what would be compiled.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configure() {  # configure DIR [ARGS...]
  local dir=$1; shift
  cmake -S "$source_dir" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER= \
    -DGPUSCALER_BUILD_TESTS=OFF -DGPUSCALER_BUILD_BENCH=OFF "$@" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
}
configure "$work/on"
configure "$work/off" -DGPUSCALER_UNITY_BUILD=OFF
fail=0
# Default: the planner's files are compiled through a unity batch, not alone.
grep -q '"file": "[^"]*/gpuscaler_solver.dir/Unity/unity_0_cxx.cxx"' "$work/on/compile_commands.json" ||
  { echo "default build: no unity batch for gpuscaler_solver"; fail=1; }
! grep -q '"file": "'"$source_dir"'/src/solver/planner.cc"' "$work/on/compile_commands.json" ||
  { echo "default build: src/solver/planner.cc compiled alone"; fail=1; }
# The files that must stay alone do, even in the default build.
grep -q '"file": "'"$source_dir"'/src/net/http_client.cc"' "$work/on/compile_commands.json" ||
  { echo "default build: src/net/http_client.cc is not compiled alone"; fail=1; }
# OFF: every file on its own, no batch at all.
grep -q '"file": "'"$source_dir"'/src/solver/planner.cc"' "$work/off/compile_commands.json" ||
  { echo "GPUSCALER_UNITY_BUILD=OFF: src/solver/planner.cc is not compiled alone"; fail=1; }
! grep -q '/Unity/' "$work/off/compile_commands.json" ||
  { echo "GPUSCALER_UNITY_BUILD=OFF: unity batches remain"; fail=1; }
exit $fail
