#!/usr/bin/env bash
# Fuzzes every parser target of tests/fuzz with libFuzzer for a bounded time
# and ends with one line:
#
#   fuzz: targets=N executions=M crashes=C
#
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET]     # default 40
#
# Builds the `fuzz` preset (clang-14; ASan + UBSan + libFuzzer coverage),
# then runs the targets one after another, each in libFuzzer's fork mode with
# FUZZ_JOBS workers (default: nproc, 2 on CI), so both cores fuzz and a crash
# does not end the run (-ignore_crashes: the other workers go on, and every
# crash is counted). FUZZ_TARGETS="policy http" runs only those.
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
seconds="${1:-40}"
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
    # One watch event per line: each event's object is a seed of its own.
    local n=0
    while IFS= read -r line && [ $n -lt 20 ]; do
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

total_execs=0
total_crashes=0
fuzz_start=$(date +%s)
for t in "${targets[@]}"; do
  bin=build/fuzz/tests/fuzz/fuzz_$t
  mkdir -p "$run/corpus/$t"
  rm -rf "$run/artifacts/$t"
  mkdir -p "$run/artifacts/$t"
  args=(-fork="$workers" -ignore_crashes=1 -max_total_time="$seconds" -max_len="${max_len[$t]}"
        -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$run/artifacts/$t/" -print_final_stats=1)
  [ -f "tests/fuzz/dict/$t.dict" ] && args+=(-dict="tests/fuzz/dict/$t.dict")
  # libFuzzer exits non-zero when it found something; that is counted below.
  "$bin" "${args[@]}" "$run/corpus/$t" "tests/fuzz/corpus/$t" "$run/seeds/$t" > "$run/$t.log" 2>&1 || true
  # Fork mode prints "#RUNS: cov: ... corp: ... exec/s: ..." as it goes; the
  # last one has the total over all workers.
  stats=$(grep -E '^#[0-9]+: cov:' "$run/$t.log" | tail -n 1 || true)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"${stats:-#0:}")
  cov=$(sed -nE 's/.* cov: ([0-9]+) .*/\1/p' <<<"$stats")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$stats")
  # Crashes: the artifacts written, or the parent's own count of failed
  # inputs (oom/timeout/crash: a/b/c), whichever is larger.
  crashes=$(find "$run/artifacts/$t" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  counted=$(sed -nE 's|.* oom/timeout/crash: ([0-9]+)/([0-9]+)/([0-9]+) .*|\1 + \2 + \3|p' <<<"$stats")
  if [ -n "$counted" ] && [ $((counted)) -gt "$crashes" ]; then crashes=$((counted)); fi
  if [ "${execs:-0}" -eq 0 ]; then
    echo "fuzz: $t ran nothing; log tail:" >&2
    tail -n 20 "$run/$t.log" >&2
    crashes=$((crashes + 1))
  fi
  printf 'fuzz: %-10s executions=%-9s cov=%-5s corpus=%-5s crashes=%s\n' "$t" "$execs" "${cov:-?}" "${corp:-?}" "$crashes"
  if [ "$crashes" -gt 0 ]; then
    find "$run/artifacts/$t" -type f | head -n 5 | sed 's/^/fuzz:   /'
    grep -m 3 -E 'ERROR: |invariant failed|runtime error' "$run/$t.log" | sed 's/^/fuzz:   /' || true
  fi
  total_execs=$((total_execs + execs))
  total_crashes=$((total_crashes + crashes))
done
echo "fuzz: fuzzing took $(( $(date +%s) - fuzz_start ))s ($seconds s x ${#targets[@]} targets, $workers workers)"
echo "fuzz: targets=${#targets[@]} executions=$total_execs crashes=$total_crashes"
[ "$total_crashes" -eq 0 ]
