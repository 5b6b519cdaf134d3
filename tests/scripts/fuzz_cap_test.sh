#!/usr/bin/env bash
# scripts/fuzz_cap.sh: what FUZZ_DEADLINE does to each target's time in
# scripts/fuzz.sh (CI sets it so that fuzzing ends before CI's limit).
set -euo pipefail
. "$(dirname "$0")/../../scripts/fuzz_cap.sh"
fail=0
expect() {  # expect WANT SECONDS WORKERS TARGETS DEADLINE NOW
  local want=$1; shift
  local got; got=$(fuzz_cap "$@")
  if [ "$got" != "$want" ]; then
    echo "fuzz_cap $*: got $got, want $want"
    fail=1
  fi
}
expect 480 480 2 8 "" 1000          # no deadline: the cap as given
expect 480 480 2 8 10000 1000       # 9000 s left: 2250 s each, more than the cap
expect 250 480 2 8 2000 1000        # 1000 s left, 8 targets 2 at a time: 250 s each
expect 125 480 1 8 2000 1000        # one at a time: half that
expect 15 480 2 8 1010 1000         # 10 s left: never under 15 s
expect 15 480 2 8 900 1000          # past the deadline: 15 s
expect 60 60 2 8 2000 1000          # a cap below the share stays
exit $fail
