#!/usr/bin/env bash
# Runs the README's commands as written, with every `sudo` failing as if it
# were not installed (a root shell or a container often has none):
#
#   1. the quick start: no command starts with sudo; scripts/setup.sh's root
#      handling (apt-get directly as root, through sudo otherwise, a clear
#      error when neither), with stand-ins for dpkg-query, apt-get, id and
#      sudo; the real setup.sh with everything installed; the demo
#      (`./scripts/demo.sh`, on a free port): its start-up line names a fresh
#      audit database, the dashboard, /reports and /metrics answer, Ctrl-C
#      (SIGINT) stops it with a final "gpuscaler stopped" line and exit 0,
#      and a report of that database runs; scripts/test.sh ends with ctest;
#   2. the "Trying the commands" block, line by line, in a copy of the
#      checkout's tracked files with the built binary at
#      build/release/gpuscaler (so no rebuild).
#
#   scripts/check_readme.sh [BINARY]     # default: build/release/gpuscaler
#
# ctest runs it as readme_commands (release preset). The demo step runs
# ./scripts/demo.sh in this checkout, so build/release must be built (its
# cmake --build step is then a no-op). Takes about a minute.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
binary="$(cd "$(dirname "${1:-$repo/build/release/gpuscaler}")" && pwd)/$(basename "${1:-gpuscaler}")"
[ -x "$binary" ] || { echo "check_readme: no built binary at $binary (build the release preset first)" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/check-readme.XXXXXX")"
demo_pid=""
demo_db=""
cleanup() {
  if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then kill -TERM "$demo_pid" 2>/dev/null || true; fi
  if [ -n "$demo_db" ]; then rm -f "$demo_db" "$demo_db-wal" "$demo_db-shm"; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "check_readme: FAIL: $*" >&2
  exit 1
}
step() { echo "== check_readme: $*"; }

# A sudo that fails like a missing one, first on PATH.
mkdir -p "$work/nosudo"
cat >"$work/nosudo/sudo" <<'EOF'
#!/bin/sh
echo "sudo: command not found (the README's commands must run without sudo)" >&2
exit 127
EOF
chmod +x "$work/nosudo/sudo"
export PATH="$work/nosudo:$PATH"

# The fenced ```sh blocks of one "## " section of the README.
readme_block() {
  awk -v want="$1" '
    /^## / { section = substr($0, 4); next }
    /^```/ { if (inside) { inside = 0 } else if (section == want && $0 == "```sh") { inside = 1 }; next }
    inside { print }
  ' "$repo/README.md"
}
quick_start="$(readme_block "Quick start (Debian 12)")"
examples="$(readme_block "Trying the commands")"
[ -n "$quick_start" ] || fail "README.md has no sh block under '## Quick start (Debian 12)'"
[ -n "$examples" ] || fail "README.md has no sh block under '## Trying the commands'"

step "no README command starts with sudo"
if grep -nE '^[[:space:]]*sudo([[:space:]]|$)' <<<"$quick_start$examples"; then
  fail "README commands above start with sudo"
fi
echo "$quick_start" | grep -qx './scripts/demo.sh' || fail "the quick start does not run ./scripts/demo.sh"
echo "$quick_start" | grep -qx './scripts/test.sh' || fail "the quick start does not run ./scripts/test.sh"

# ---- setup.sh: who runs apt-get ------------------------------------------
step "scripts/setup.sh runs apt-get as root, through sudo otherwise, and fails clearly without either"
fake="$work/fake"
mkdir -p "$fake"
for tool in bash grep env cat; do ln -s "$(command -v "$tool")" "$fake/$tool"; done
# Every package installed but ccache (and an aws CLI counted as present).
cat >"$fake/dpkg-query" <<'EOF'
#!/bin/sh
for last; do :; done
[ "$last" = ccache ] && exit 1
printf 'install ok installed'
EOF
cat >"$fake/apt-get" <<EOF
#!/bin/sh
echo "apt-get uid=\$(id -u) DEBIAN_FRONTEND=\$DEBIAN_FRONTEND \$*" >>"$work/apt.log"
EOF
cat >"$fake/id" <<'EOF'
#!/bin/sh
echo "${FAKE_UID:-0}"
EOF
cat >"$fake/aws" <<'EOF'
#!/bin/sh
EOF
chmod +x "$fake"/dpkg-query "$fake"/apt-get "$fake"/id "$fake"/aws
run_setup() {  # FAKE_UID, extra PATH dir (or ""), output file
  local dirs="$fake"
  [ -n "$2" ] && dirs="$2:$fake"
  rm -f "$work/apt.log"
  set +e
  FAKE_UID="$1" PATH="$dirs" "$fake/bash" "$repo/scripts/setup.sh" >"$3" 2>&1
  local rc=$?
  set -e
  return $rc
}
# Root, no sudo anywhere: apt-get directly.
run_setup 0 "" "$work/root.out" || fail "setup.sh as root without sudo: $(cat "$work/root.out")"
grep -q 'install .*ccache' "$work/apt.log" || fail "setup.sh as root did not apt-get install ccache: $(cat "$work/root.out")"
grep -q 'DEBIAN_FRONTEND=noninteractive' "$work/apt.log" || fail "apt-get ran without DEBIAN_FRONTEND=noninteractive"
# Not root, no sudo: a clear error, no apt-get.
if run_setup 1000 "" "$work/user.out"; then fail "setup.sh as a user without sudo succeeded"; fi
grep -q 'needs root (apt-get) and sudo is not installed' "$work/user.out" ||
  fail "setup.sh as a user without sudo said: $(cat "$work/user.out")"
[ ! -e "$work/apt.log" ] || fail "setup.sh ran apt-get as a user without sudo"
# Not root, with sudo: apt-get through it.
mkdir -p "$work/withsudo"
cat >"$work/withsudo/sudo" <<EOF
#!/bin/sh
echo "sudo \$*" >>"$work/sudo.log"
FAKE_UID=0 exec "\$@"
EOF
chmod +x "$work/withsudo/sudo"
run_setup 1000 "$work/withsudo" "$work/sudo.out" || fail "setup.sh as a user with sudo: $(cat "$work/sudo.out")"
grep -q 'apt-get install' "$work/sudo.log" || fail "setup.sh as a user did not run apt-get through sudo"
grep -q 'uid=0 .*install .*ccache' "$work/apt.log" || fail "apt-get through sudo did not install ccache"
# This machine, as is: everything installed, nothing to do.
out="$("$repo/scripts/setup.sh" 2>&1)" || fail "scripts/setup.sh: $out"
grep -q 'packages present' <<<"$out" || fail "scripts/setup.sh: $out"

# ---- the test script ends with ctest (its summary is the last output) -----
step "scripts/test.sh ends with ctest"
# The last command at the script's top level (an indented continuation,
# the failure digest, is part of it).
last_command="$(grep -vE '^[[:space:]]*(#|$)' "$repo/scripts/test.sh" | grep -vE '^[[:space:]]' | tail -n 1)"
[[ "$last_command" == ctest\ * ]] || fail "scripts/test.sh's last command is not ctest: $last_command"

# ---- the demo, as written (on a free port) -------------------------------
step "./scripts/demo.sh: start-up line, endpoints, Ctrl-C"
demo_log="$work/demo.log"
start=$(date +%s)
# Job control on, so the background demo keeps SIGINT (Ctrl-C) handling.
set -m
(cd "$repo" && LISTEN=127.0.0.1:0 exec ./scripts/demo.sh) >"$demo_log" 2>&1 </dev/null &
demo_pid=$!
set +m
listening=""
for _ in $(seq 1 600); do
  listening="$(grep -m1 -oE 'listening on http://127\.0\.0\.1:[0-9]+/ \(mode demo, audit db [^)]+\)' "$demo_log" || true)"
  [ -n "$listening" ] && break
  kill -0 "$demo_pid" 2>/dev/null || fail "demo.sh exited before listening: $(tail -n 20 "$demo_log")"
  sleep 0.5
done
[ -n "$listening" ] || fail "demo.sh did not listen within 300 s: $(tail -n 20 "$demo_log")"
port="$(sed -E 's|.*127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$listening")"
demo_db="$(sed -E 's|.*audit db ([^)]+)\)|\1|' <<<"$listening")"
[[ "$(basename "$demo_db")" =~ ^gpuscaler-demo-[0-9]{8}T[0-9]{6}Z-[0-9]+\.db$ ]] ||
  fail "the demo's audit database is not a fresh per-run file: $demo_db"
[ -f "$demo_db" ] || fail "the demo's audit database $demo_db does not exist"
echo "demo listening on port $port after $(( $(date +%s) - start )) s, audit db $demo_db"
sleep 3  # a few ticks
for path in / /api/v1/status /reports /metrics; do
  code="$(curl -s -o "$work/body" -w '%{http_code}' "http://127.0.0.1:$port$path")" || code="curl failed"
  [ "$code" = 200 ] || fail "GET $path answered $code"
done
kill -INT "$demo_pid"
set +e
wait "$demo_pid"
demo_rc=$?
set -e
demo_pid=""
[ "$demo_rc" -eq 0 ] || fail "the demo exited $demo_rc after Ctrl-C: $(tail -n 5 "$demo_log")"
tail -n 1 "$demo_log" | grep -q 'gpuscaler stopped (exit code 0)' ||
  fail "the demo's last line is not 'gpuscaler stopped': $(tail -n 3 "$demo_log")"
# The README's report command on the demo's database.
report_out="$("$binary" report --db "$demo_db" --format csv 2>"$work/report.err")" ||
  fail "gpuscaler report on the demo database: $(cat "$work/report.err")"
[ "$(wc -l <<<"$report_out")" -ge 2 ] || fail "the demo's cost report has no rows: $(cat "$work/report.err")"

# ---- the examples, in a clean copy of the checkout -----------------------
step "the 'Trying the commands' block, in a copy of the checkout"
clone="$work/clone"
mkdir -p "$clone/build/release"
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$clone"
ln -s "$binary" "$clone/build/release/gpuscaler"
start=$(date +%s)
(
  cd "$clone"
  set -euo pipefail
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    echo "\$ $line"
    eval "$line" >"$work/example.out" 2>&1 || {
      rc=$?
      cat "$work/example.out"
      fail "exit $rc: $line"
    }
    tail -n 3 "$work/example.out"
  done <<<"$examples"
)
echo "examples ran in $(( $(date +%s) - start )) s"
echo "check_readme: all README commands ran as written"
