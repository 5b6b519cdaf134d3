#!/usr/bin/env bash
# A private PostgreSQL server for the audit store tests (Debian's
# postgresql-15; scripts/setup.sh installs it), on 127.0.0.1 at a free port.
#
#   postgres_server.sh start STATE_DIR   # writes STATE_DIR/url (postgresql://gpuscaler@127.0.0.1:PORT/postgres)
#   postgres_server.sh stop STATE_DIR    # stops it and removes its files
#
# The cluster lives in a fresh folder under the temp dir (its socket too),
# named in STATE_DIR/data_dir. initdb and the server refuse to run as root:
# as root, they run as the `postgres` user, which owns the folder. Tuned for
# tests (fsync off: a test's crash is a process exit, never a power loss).
set -euo pipefail
action="${1:?start or stop}"
state="${2:?state dir}"

bin=""
for candidate in /usr/lib/postgresql/*/bin; do
  [ -x "$candidate/initdb" ] && bin="$candidate"
done
if [ -z "$bin" ]; then
  echo "postgres_server.sh: no PostgreSQL server (initdb) under /usr/lib/postgresql: run scripts/setup.sh (it installs postgresql-15)" >&2
  exit 1
fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop() {
  [ -f "$state/data_dir" ] || return 0
  local data
  data="$(cat "$state/data_dir")"
  if [ -f "$data/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$data/data" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$data"
  rm -f "$state/data_dir" "$state/url"
}

case "$action" in
  start)
    mkdir -p "$state"
    stop
    data="$(mktemp -d "${TMPDIR:-/tmp}/gpuscaler-postgres.XXXXXX")"
    chmod 755 "$data"
    echo "$data" >"$state/data_dir"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$data"; fi
    as_owner "$bin/initdb" -D "$data/data" -A trust -U gpuscaler -E UTF8 --locale=C --no-sync >"$data/initdb.log" 2>&1 || {
      cat "$data/initdb.log" >&2
      exit 1
    }
    # One role logs in with a password (scram-sha-256) over TCP, for the
    # tests of passwords; every other login is trusted.
    sed -i '1i host all gpuscaler_password 127.0.0.1/32 scram-sha-256' "$data/data/pg_hba.conf"
    # A free port can be taken between the probe and the bind: try a few.
    for attempt in 1 2 3 4 5; do
      port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
      if as_owner "$bin/pg_ctl" -D "$data/data" -l "$data/server.log" -w -t 60 start \
        -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
        >/dev/null; then
        echo "postgresql://gpuscaler@127.0.0.1:$port/postgres" >"$state/url"
        echo "postgres_server.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at $(cat "$state/url") (data $data)"
        exit 0
      fi
      echo "postgres_server.sh: start on port $port failed (attempt $attempt):" >&2
      tail -5 "$data/server.log" >&2 || true
    done
    exit 1
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start|stop STATE_DIR" >&2
    exit 2
    ;;
esac
