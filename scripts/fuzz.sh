#!/usr/bin/env bash
# Fuzzes every parser target of tests/fuzz with libFuzzer for a bounded time
# and ends with one line:
#
#   fuzz: targets=N executions=M crashes=C
#
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET]     # default 60
#   ./scripts/fuzz.sh --executions              # what CI runs
#
# Builds the `fuzz` preset (clang-14; ASan + UBSan + libFuzzer coverage),
# then fuzzes every target for SECONDS_PER_TARGET, FUZZ_JOBS targets at a
# time (default: nproc, 2 on CI; so the run takes about
# targets x SECONDS / FUZZ_JOBS). FUZZ_TARGETS="policy http" runs only those.
#
# --executions fuzzes every target for a fixed number of executions instead
# (the budgets below: 10.2 M in all, each target about 5-6 minutes on one
# core here), capped at FUZZ_MAX_SECONDS per target (default 480) so a slow
# machine cannot run away with CI. A count, unlike a time, is the same on
# every machine: with FUZZ_SEED fixed, CI's run is the run a push was
# checked with (up to the checkout path, which appears in some messages).
# FUZZ_DEADLINE=EPOCH_SECONDS (CI sets it) lowers that cap further so that
# fuzzing, which starts after the build, ends by then: each target gets at
# most its share of the time left (never under 15 s). A target stopped by a
# cap says so; a cap never fails the run, only a crash does.
# FUZZ_SEED=N fixes libFuzzer's random seed: a run from a fresh build/fuzz/run
# then mutates the same inputs in the same order on any machine, so a
# shorter run explores a prefix of a longer one. CI uses FUZZ_SEED=1 with
# --executions; to check a parser change before pushing, run
# `rm -rf build/fuzz/run && FUZZ_SEED=1 ./scripts/fuzz.sh --executions`:
# for the same code it is CI's run, but for the checkout path.
#
# Inputs: the seeds in tests/fuzz/corpus/<target> (read only), plus seeds
# cut at run time from ../shared (public responses, scrapes and trace heads;
# never copied into the repository), plus what earlier runs found in
# build/fuzz/run/corpus/<target>, where new inputs go.
# Crashes: build/fuzz/run/artifacts/<target>/ (crash-*, leak-*, timeout-*,
# oom-*); reproduce with `build/fuzz/tests/fuzz/fuzz_<target> FILE`, and once
# fixed copy the file into tests/fuzz/corpus/<target>/ so ctest replays it.
# Exit status 1 when anything crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
# Executions per target for --executions: proportional to each target's
# speed (exec/s under ASan here: http ~9 k, traces ~7.5 k, snapshot ~5 k,
# exposition ~3 k, kube ~1.7 k, aws_xml ~1.3 k, policy ~1.2 k, catalog ~0.9 k)
# so that the targets take about the same time (about 4 min each under
# CI's load, which keeps .ci/run well inside its 90 minutes).
declare -A executions=([policy]=200000 [catalog]=150000 [exposition]=550000 [aws_xml]=225000
                       [http]=1600000 [traces]=1250000 [snapshot]=850000 [kube]=275000)
mode=time
if [ "${1:-}" = "--executions" ]; then
  mode=executions
  seconds="${FUZZ_MAX_SECONDS:-480}"
else
  seconds="${1:-60}"
fi
workers="${FUZZ_JOBS:-$(nproc)}"
targets=(${FUZZ_TARGETS:-policy catalog exposition aws_xml http traces snapshot kube})
shared="${GPUSCALER_SHARED_DIR:-$(cd .. && pwd)/shared}"

# Longest input per target: long enough for a realistic document, short
# enough that most executions are spent on structure rather than bulk.
declare -A max_len=([policy]=4096 [catalog]=4096 [exposition]=4096 [aws_xml]=4096
                    [http]=1024 [traces]=4096 [snapshot]=4096 [kube]=4096)

build_start=$(date +%s)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
echo "fuzz: build took $(( $(date +%s) - build_start ))s"

run=build/fuzz/run
mkdir -p "$run"

. scripts/fuzz_cap.sh
now=$(date +%s)
capped=$(fuzz_cap "$seconds" "$workers" "${#targets[@]}" "${FUZZ_DEADLINE:-}" "$now")
if [ "$capped" -lt "$seconds" ]; then
  echo "fuzz: $(( FUZZ_DEADLINE - now ))s left before FUZZ_DEADLINE: each target capped at ${capped}s (was ${seconds}s)"
  seconds=$capped
fi

# seed TARGET PREFIX_BYTES FILE: the first lines of FILE, behind the bytes
# the target reads first (format selectors), as one seed.
seed() {
  local target=$1 prefix=$2 file=$3
  [ -f "$file" ] || return 0
  { printf "$prefix"; head -c "${max_len[$target]}" "$file" | head -n 40; } \
    > "$run/seeds/$target/$(basename "$file")"
}

seed_from_shared() {
  rm -rf "$run/seeds"
  for t in "${targets[@]}"; do mkdir -p "$run/seeds/$t"; done
  # Repository files that are not seeds of their own but make good ones.
  for f in policies/*; do [ -d "$run/seeds/policy" ] && seed policy "" "$f"; done
  for f in sim/testdata/explain/*.json; do [ -d "$run/seeds/snapshot" ] && seed snapshot "" "$f"; done
  if [ ! -d "$shared" ]; then
    echo "fuzz: $shared not found; fuzzing from the repository's seeds only"
    return 0
  fi
  local f
  if [ -d "$run/seeds/exposition" ]; then
    for f in "$shared"/reference/prometheus/exposition/* "$shared"/reference/dcgm/samples/*; do
      case "$f" in *.om.txt) seed exposition '1' "$f" ;; *) seed exposition '0' "$f" ;; esac
    done
  fi
  if [ -d "$run/seeds/aws_xml" ]; then
    for f in "$shared"/reference/aws/botocore-fixtures/*.xml "$shared"/reference/aws/examples/eventbridge-*.json; do
      seed aws_xml "" "$f"
    done
  fi
  if [ -d "$run/seeds/kube" ]; then
    for f in "$shared"/reference/kubernetes/api-testdata/core.v1.*.json "$shared"/reference/kubernetes/examples/*.json; do
      seed kube "" "$f"
    done
    # One watch event per line: each line (ParseWatchEvent) and its object
    # are seeds of their own.
    local n=0
    while IFS= read -r line && [ $n -lt 20 ]; do
      printf '%s' "$line" > "$run/seeds/kube/watch-line-$n.json"
      python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]).get("object", {})))' "$line" \
        > "$run/seeds/kube/watch-object-$n.json" 2>/dev/null || true
      n=$((n + 1))
    done < "$shared/reference/kubernetes/examples/watch-pods.assembled.jsonl" 2>/dev/null || true
  fi
  if [ -d "$run/seeds/traces" ]; then
    # First byte: the format's index in TraceFormatNames() then
    # MarketFormatNames() (traces_fuzz.cc); second: options, none.
    for f in "$shared"/data/traces/* "$shared"/data/prices/*; do
      local b=""
      case "$(basename "$f")" in
        alibaba_gpu_v2023_openb_pods_*) b='\x02' ;;
        alibaba_gpu_v2025_dlrm_instances_*) b='\x03' ;;
        helios_earth_vc_minute_*) b='\x04' ;;
        philly_sampled_jobs_*) b='\x05' ;;
        alibaba_v2026_genai_queue_size_*) b='\x06' ;;
        alibaba_v2026_genai_qps_*) b='\x07' ;;
        alibaba_v2026_genai_pod_gpu_duty_cycle_*) b='\x08' ;;
        spot_availability_*|spot_preemption_*) b='\x09' ;;
        spot_events_aws_p3_parcae_*) b='\x0a' ;;
        aws_spot_advisor_*) b='\x0b' ;;
        aws_spot_price_history_*) b='\x0c' ;;
        gcp_gpu_vm_price_changes_*) b='\x0d' ;;
      esac
      [ -n "$b" ] && seed traces "$b\\x40" "$f"
    done
  fi
  return 0
}
seed_from_shared

fuzz_one() {
  local t=$1
  mkdir -p "$run/corpus/$t"
  rm -rf "$run/artifacts/$t"
  mkdir -p "$run/artifacts/$t"
  local args=(-max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=10 -rss_limit_mb=2048
              -artifact_prefix="$run/artifacts/$t/" -print_final_stats=1)
  [ "$mode" = executions ] && args+=(-runs="${executions[$t]}")
  [ -f "tests/fuzz/dict/$t.dict" ] && args+=(-dict="tests/fuzz/dict/$t.dict")
  [ -n "${FUZZ_SEED:-}" ] && args+=(-seed="$FUZZ_SEED")
  # libFuzzer exits non-zero when it found something; that is counted below.
  "build/fuzz/tests/fuzz/fuzz_$t" "${args[@]}" "$run/corpus/$t" "tests/fuzz/corpus/$t" "$run/seeds/$t" \
    > "$run/$t.log" 2>&1 || true
}

# One plain libFuzzer process per core, targets side by side: fork mode's
# per-job restarts cost most of a short run. A crash ends that target's run
# (and fails this script); the others go on.
fuzz_start=$(date +%s)
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$workers" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

total_execs=0
total_crashes=0
short=0
for t in "${targets[@]}"; do
  execs=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+).*/\1/p' "$run/$t.log" | tail -n 1)
  cov=$(grep -aoE ' cov: [0-9]+' "$run/$t.log" | tail -n 1 | tr -dc 0-9)
  speed=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$run/$t.log" | tail -n 1)
  crashes=$(find "$run/artifacts/$t" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if grep -aqE '^==[0-9]+== ?ERROR|deadly signal|invariant failed' "$run/$t.log" && [ "$crashes" -eq 0 ]; then
    crashes=1
  fi
  if [ -z "$execs" ]; then
    echo "fuzz: $t did not finish; log tail:" >&2
    tail -n 20 "$run/$t.log" >&2
    execs=0
    crashes=$((crashes + 1))
  fi
  printf 'fuzz: %-10s executions=%-9s exec/s=%-6s cov=%-5s crashes=%s\n' "$t" "$execs" "${speed:-?}" "${cov:-?}" "$crashes"
  if [ "$mode" = executions ] && [ "$execs" -lt "${executions[$t]}" ] && [ "$crashes" -eq 0 ]; then
    echo "fuzz:   $t stopped at the ${seconds} s cap before its ${executions[$t]} executions"
    short=$((short + 1))
  fi
  if [ "$crashes" -gt 0 ]; then
    find "$run/artifacts/$t" -type f | head -n 5 | sed 's/^/fuzz:   /'
    grep -a -m 3 -E 'ERROR: |invariant failed|runtime error' "$run/$t.log" | sed 's/^/fuzz:   /' || true
  fi
  total_execs=$((total_execs + execs))
  total_crashes=$((total_crashes + crashes))
done
if [ "$mode" = executions ]; then
  echo "fuzz: fuzzing took $(( $(date +%s) - fuzz_start ))s (fixed executions per target, ${#targets[@]} targets, $workers at a time)"
else
  echo "fuzz: fuzzing took $(( $(date +%s) - fuzz_start ))s ($seconds s x ${#targets[@]} targets, $workers at a time)"
fi
echo "fuzz: targets=${#targets[@]} executions=$total_execs crashes=$total_crashes"
[ "$total_crashes" -eq 0 ]
