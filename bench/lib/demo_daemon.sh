# Sourced by the bench scripts (bench/load, bench/soak): starts `gpuscaler run
# --demo` on a free loopback port with its own audit file in a temporary
# folder, and stops it and removes the folder when the script exits.
#
#   start_demo_daemon NAME BIN [run flags...]
# sets: work (the folder), daemon_pid, base (http://127.0.0.1:PORT).

work=""
daemon_pid=""
stop_demo_daemon() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  [ -z "$work" ] || rm -rf "$work"
}

start_demo_daemon() {
  local name="$1" bin="$2"
  shift 2
  work="$(mktemp -d "/tmp/gpuscaler-$name.XXXXXX")"
  trap stop_demo_daemon EXIT
  "$bin" --log-level warn run --demo "$@" --listen 127.0.0.1:0 --port-file "$work/port" \
    --db "$work/audit.db" >"$work/daemon.out" 2>"$work/daemon.err" &
  daemon_pid=$!
  for _ in $(seq 1 200); do
    [ -s "$work/port" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.err" >&2; echo "$name: daemon exited" >&2; exit 1; }
    sleep 0.05
  done
  [ -s "$work/port" ] || { echo "$name: daemon did not listen within 10 s" >&2; exit 1; }
  base="http://127.0.0.1:$(cat "$work/port")"
}
