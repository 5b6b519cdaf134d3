#!/usr/bin/env bash
# Soak benchmark: the daemon runs a 90-day simulated load at full
# speed — `gpuscaler run --demo`: the production Controller against the
# simulated cloud, whose spot interruptions (hazard per family) and capacity
# limits (spot and on-demand per zone, p4d/p5 very scarce) fault it all the
# time — while this script
#   - scrapes /metrics and /api/v1/status every second and a cost report of
#     the last 7 simulated days every 10 seconds (as Prometheus and a
#     dashboard would), and
#   - holds the audit database's write lock from another connection for
#     --lock-seconds every --lock-every seconds (a storage fault: ticks fail
#     to record, act on nothing, and recover),
# and samples the daemon's memory. Memory is flat when
#   - the heap in use (gpuscaler_heap_in_use_bytes: bytes malloc handed out
#     and did not get back) at the end is within 10 % (or 8 MB) of the heap
#     in use after the first simulated day (the first day fills caches, the
#     series ring, the metric families): nothing accumulates; and
#   - the resident heap (RssAnon: live allocations plus the free pages the
#     allocator keeps) grew by at most 10 % (or 8 MB) from day 30 to the end:
#     what the allocator holds has levelled off. (From day 1 it may grow for
#     a while: report renders over a window that widens to 7 days, and each
#     thread's malloc arena keeps its high-water mark.)
#
#   bench/soak/run_soak.sh [--bin PATH] [--days 90] [--lock-every S] [--lock-seconds S]
#
# Prints one summary line:
#   soak: days=90 rss_start_mb=… rss_end_mb=… rss_peak_mb=… anon_start_mb=… anon_end_mb=… …
# rss_* is VmRSS (it includes pages of the audit file that reports map),
# anon_* the heap and stacks only (RssAnon), heap_* the heap in use;
# start = after simulated day 1.
# Exit status 1 if the daemon died, HTTP failed, the database is not intact,
# or memory was not flat as above. Runs shorter than 31 days check the heap
# in use only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../lib/demo_daemon.sh"
root="$(cd "$here/../.." && pwd)"
bin="${GPUSCALER_BIN:-$root/build/h-load/gpuscaler}"
days=90
lock_every=60
lock_seconds=7   # longer than the store's 5 s busy timeout: the tick fails
# The daemon's tick floor is 10 ms of real time, so a 60 s tick at this
# speed runs as fast as the loop allows (90 days = 129,600 ticks).
speed=1000000

while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --days) days="$2"; shift 2 ;;
    --lock-every) lock_every="$2"; shift 2 ;;
    --lock-seconds) lock_seconds="$2"; shift 2 ;;
    *) echo "run_soak: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "run_soak: no gpuscaler binary at $bin" >&2; exit 2; }

start_demo_daemon run_soak "$bin" --days "$days" --speed "$speed"

# Holds the write lock of the audit file for $1 seconds, as another program
# would (WAL: readers go on, the daemon's writes wait and then fail).
hold_lock() {
  python3 - "$work/audit.db" "$1" <<'EOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
db.execute("BEGIN IMMEDIATE")
time.sleep(float(sys.argv[2]))
db.execute("ROLLBACK")
EOF
}

# gpuscaler_heap_in_use_bytes in KB, from a /metrics text on stdin.
heap_kb() { awk '$1 == "gpuscaler_heap_in_use_bytes" {printf "%.0f", $2 / 1024}'; }
kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$daemon_pid/status"; }
mb() { awk -v v="$1" 'BEGIN {printf "%.1f", v / 1024}'; }
status_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1]) if d.get(sys.argv[1]) is not None else "")' "$1"; }

start_s=$SECONDS
http_errors=0
locks=0
rss_start="" anon_start="" heap_start="" rss_day30="" anon_day30="" heap_day30="" heap=""
first_day=""
last_lock=$SECONDS
samples="$work/samples.tsv"
echo -e "elapsed_s\tsim_time\tticks\trss_kb\tanon_kb\theap_in_use_kb" >"$samples"
while kill -0 "$daemon_pid" 2>/dev/null; do
  sleep 1
  status="$(curl -sf --max-time 10 "$base/api/v1/status")" || { http_errors=$((http_errors + 1)); continue; }
  if metrics_now="$(curl -sf --max-time 10 "$base/metrics")"; then
    heap="$(heap_kb <<<"$metrics_now")"
  else
    http_errors=$((http_errors + 1))
  fi
  sim_time="$(status_field time <<<"$status")"
  if [ $(((SECONDS - start_s) % 10)) -eq 0 ] && [ -n "$sim_time" ]; then
    # The last 7 simulated days: a window of fixed size, so that the
    # report's own working memory does not grow with the run.
    window="$(python3 -c 'import sys,datetime as d; t=d.date.fromisoformat(sys.argv[1]); print(f"from={t-d.timedelta(days=7)}&to={t+d.timedelta(days=1)}")' "${sim_time:0:10}")"
    curl -sf --max-time 30 -o /dev/null "$base/reports/report.json?$window" || http_errors=$((http_errors + 1))
  fi
  ticks="$(status_field ticks <<<"$status")"
  rss="$(kb VmRSS)" anon="$(kb RssAnon)"
  echo -e "$((SECONDS - start_s))\t$sim_time\t$ticks\t$rss\t$anon\t$heap" >>"$samples"
  [ -z "$first_day" ] && [ -n "$sim_time" ] && first_day="${sim_time:0:10}"
  # Days since the first tick, from the simulated clock.
  day="$(python3 -c 'import sys,datetime as d; a=d.date.fromisoformat(sys.argv[1]); b=d.date.fromisoformat(sys.argv[2]); print((b-a).days)' "$first_day" "${sim_time:0:10}" 2>/dev/null || echo 0)"
  if [ -z "$rss_start" ] && [ "$day" -ge 1 ]; then rss_start="$rss" anon_start="$anon" heap_start="$heap"; fi
  if [ -z "$rss_day30" ] && [ "$day" -ge 30 ]; then rss_day30="$rss" anon_day30="$anon" heap_day30="$heap"; fi
  if [ "$(status_field finished <<<"$status")" = "True" ]; then break; fi
  if [ $((SECONDS - last_lock)) -ge "$lock_every" ]; then
    hold_lock "$lock_seconds" && locks=$((locks + 1))
    last_lock=$SECONDS
  fi
done
kill -0 "$daemon_pid" 2>/dev/null || { echo "run_soak: the daemon died" >&2; tail -20 "$work/daemon.err" >&2; exit 1; }

rss_end="$(kb VmRSS)" anon_end="$(kb RssAnon)" rss_peak="$(kb VmHWM)"
metrics="$(curl -sf --max-time 10 "$base/metrics")"
heap_end="$(heap_kb <<<"$metrics")"
metric() { awk -v m="$1" '$1 == m {printf "%.0f", $2}' <<<"$metrics"; }
ticks_ok="$(metric 'gpuscaler_ticks_total{result="ok"}')"
ticks_err="$(metric 'gpuscaler_ticks_total{result="error"}')"
interruptions="$(metric gpuscaler_interruption_notices_total)"
capacity="$(metric gpuscaler_capacity_errors_total)"
sim_days="$(python3 -c 'import sys,datetime as d; print((d.date.fromisoformat(sys.argv[2])-d.date.fromisoformat(sys.argv[1])).days)' "$first_day" "${sim_time:0:10}")"
kill -TERM "$daemon_pid"
wait "$daemon_pid" && exit_code=0 || exit_code=$?
daemon_pid=""
integrity="$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$work/audit.db")"
open_intents="$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM actions WHERE outcome = '"'pending'"'").fetchone()[0])' "$work/audit.db")"
db_mb="$(du -m "$work/audit.db" | cut -f1)"
cp "$samples" "${SOAK_SAMPLES_OUT:-/dev/null}" 2>/dev/null || true

echo "soak: days=$sim_days rss_start_mb=$(mb "$rss_start") rss_day30_mb=$(mb "$rss_day30") rss_end_mb=$(mb "$rss_end")" \
  "rss_peak_mb=$(mb "$rss_peak") anon_start_mb=$(mb "$anon_start") anon_day30_mb=$(mb "$anon_day30") anon_end_mb=$(mb "$anon_end")" \
  "heap_start_mb=$(mb "$heap_start") heap_day30_mb=$(mb "$heap_day30") heap_end_mb=$(mb "$heap_end")" \
  "ticks_ok=$ticks_ok ticks_error=$ticks_err interruptions=$interruptions capacity_errors=$capacity" \
  "store_lock_faults=$locks http_errors=$http_errors integrity=$integrity open_intents=$open_intents db_mb=$db_mb" \
  "exit=$exit_code wall_s=$((SECONDS - start_s))"
awk -v hs="$heap_start" -v he="$heap_end" -v a30="$anon_day30" -v ae="$anon_end" \
    -v h="$http_errors" -v i="$integrity" -v e="$exit_code" '
  function flat(from, to) { return to - from <= 8192 || to - from <= 0.10 * from }
  BEGIN {
    ok = h == 0 && i == "ok" && e == 0 && hs != "" && flat(hs, he)
    if (a30 != "") ok = ok && flat(a30, ae)
    exit !ok
  }'
