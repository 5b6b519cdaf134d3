#!/usr/bin/env bash
# Load benchmark of the daemon's HTTP side: `wrk` with >= 1,000
# concurrent connections against /metrics and the cost reports while the
# daemon ticks the demo load, and what that does to the ticks.
#
#   bench/load/run_load.sh [--bin PATH] [--connections N] [--duration S] [--speed X]
#                          [--warmup S] [--threads T] [--timeout S] [--paths "P ..."]
#
# Steps: raise the open-file limit; start `gpuscaler run --demo` on a free
# loopback port with its own audit database; let it tick for --warmup seconds
# (the reports then have data to read); measure the tick-duration histogram
# over --duration seconds with no HTTP load (idle), then over --duration
# seconds of wrk (load); check the daemon still answers /healthz. Prints wrk's
# report, then one summary line:
#
#   load: connections=… requests=… errors=… rps=… tick_p99_idle_ms=… tick_p99_load_ms=… ratio=… …
#
# errors = wrk's socket errors (connect, read, write, timeout) + non-2xx/3xx
# answers. Tick p99 comes from gpuscaler_tick_duration_seconds (bucket deltas
# over each phase, interpolated within the bucket as PromQL's
# histogram_quantile does). wrk's --timeout defaults here to 10 s, Prometheus's
# default scrape_timeout: a reply slower than that counts as an error. Exit
# status 1 when there were errors or the tick p99 ratio exceeds 2.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/demo_daemon.sh"
root="$(cd "$here/../.." && pwd)"
bin="${GPUSCALER_BIN:-$root/build/h-load/gpuscaler}"
connections=1000
duration=30
speed=1200
warmup=20
threads=2
timeout=10
paths="/metrics /reports/report.json /metrics /reports/report.csv /metrics /reports/report.html /api/v1/status"

while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --speed) speed="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --paths) paths="$2"; shift 2 ;;
    *) echo "run_load: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v wrk >/dev/null || { echo "run_load: wrk is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[ -x "$bin" ] || { echo "run_load: no gpuscaler binary at $bin (build the gpuscaler target or pass --bin)" >&2; exit 2; }

# Each connection is a descriptor in wrk and one in the daemon (both inherit
# this limit), plus the daemon's own files and some slack.
want=$((connections + 512))
hard="$(ulimit -Hn)"
if [ "$hard" != "unlimited" ] && [ "$hard" -lt "$want" ]; then
  ulimit -Hn "$want" 2>/dev/null || { echo "run_load: need $want open files, hard limit is $hard" >&2; exit 2; }
fi
ulimit -Sn "$want"

# --days: long enough that the demo never reaches its horizon during the run.
start_demo_daemon run_load "$bin" --speed "$speed" --days 365

metrics() { curl -sf --max-time 30 "$base/metrics"; }
# p99 in milliseconds of the ticks observed between two /metrics texts.
tick_p99() {
  python3 - "$1" "$2" <<'EOF'
import math, re, sys
def buckets(path):
    out = {}
    for line in open(path):
        m = re.match(r'gpuscaler_tick_duration_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
        if m:
            out[math.inf if m.group(1) == "+Inf" else float(m.group(1))] = float(m.group(2))
    return out
a, b = buckets(sys.argv[1]), buckets(sys.argv[2])
les = sorted(b)
counts = [b[le] - a.get(le, 0) for le in les]
total = counts[-1]
if total <= 0:
    print("nan 0"); sys.exit()
rank = 0.99 * total
prev_le, prev_count = 0.0, 0.0
for le, c in zip(les, counts):
    if c >= rank:
        if math.isinf(le):
            value = prev_le  # beyond the last finite bucket: its bound, as PromQL
        else:
            value = prev_le + (le - prev_le) * (rank - prev_count) / max(c - prev_count, 1e-9)
        print(f"{value * 1000:.2f} {int(total)}")
        break
    prev_le, prev_count = le, c
EOF
}

sleep "$warmup"
curl -sf --max-time 10 "$base/readyz" >/dev/null || { echo "run_load: daemon not ready after ${warmup}s" >&2; exit 1; }

metrics >"$work/m0"
sleep "$duration"
metrics >"$work/m1"
read -r p99_idle ticks_idle < <(tick_p99 "$work/m0" "$work/m1")

metrics >"$work/m2"
LOAD_PATHS="$paths" wrk -t"$threads" -c"$connections" -d"${duration}s" --timeout "${timeout}s" --latency \
  -s "$here/load.lua" "$base" | tee "$work/wrk.out"
metrics >"$work/m3"
read -r p99_load ticks_load < <(tick_p99 "$work/m2" "$work/m3")
healthz="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base/healthz" || true)"
kill -0 "$daemon_pid" 2>/dev/null || { echo "run_load: the daemon died under load" >&2; cat "$work/daemon.err" >&2; exit 1; }
rss_mb="$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$daemon_pid/status")"

line="$(grep '^WRK ' "$work/wrk.out")"
get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
requests="$(get requests)"
errors=$(( $(get connect) + $(get read) + $(get write) + $(get timeout) + $(get status) ))
rps="$(awk -v r="$requests" -v us="$(get duration_us)" 'BEGIN {printf "%.0f", r / (us / 1e6)}')"
ratio="$(awk -v a="$p99_idle" -v b="$p99_load" 'BEGIN {printf "%.2f", (a > 0) ? b / a : 0}')"

echo "load: connections=$connections requests=$requests errors=$errors rps=$rps" \
  "tick_p99_idle_ms=$p99_idle tick_p99_load_ms=$p99_load ratio=$ratio" \
  "ticks_idle=$ticks_idle ticks_load=$ticks_load http_p99_ms=$(get lat_p99_ms) http_max_ms=$(get lat_max_ms)" \
  "healthz_after=$healthz daemon_peak_rss_mb=$rss_mb speed=$speed duration_s=$duration"
awk -v e="$errors" -v r="$ratio" -v h="$healthz" 'BEGIN {exit !(e == 0 && r <= 2 && h == 200)}'
