#!/usr/bin/env bash
# Prints, for each failed test in a ctest log (Testing/Temporary/LastTest.log),
# its name, how it ended, and its first assertion or crash messages (a
# script test: its last output lines): at
# most 8 lines a test and 60 in all, so that the end of a long CI log still
# says what failed and where.
#
#   ./scripts/failure_digest.sh build/release/Testing/Temporary/LastTest.log
set -euo pipefail
log="${1:?usage: failure_digest.sh LastTest.log}"
[[ -r "$log" ]] || { echo "failure_digest: cannot read $log" >&2; exit 2; }
awk '
  function flush_failed(status,   i, n) {
    if (printed >= 60) return
    print "== failed: " name " (" status ")"; printed++
    for (i = 1; i <= kept && printed < 60; i++) { print "   " lines[i]; printed++ }
    if (kept > 0) return
    # No assertion or crash line (a script test): its last output lines.
    n = seen < 6 ? seen : 6
    for (i = seen - n + 1; i <= seen && printed < 60; i++) { print "   " tail[i % 6]; printed++ }
  }
  /^[0-9]+\/[0-9]+ Testing: / { sub(/^[0-9]+\/[0-9]+ Testing: /, ""); name = $0; kept = 0; follow = 0; seen = 0; next }
  /^Test Passed\./ { name = ""; next }
  /^Test (Failed|Timeout|Not Run|\*\*\*)/ || /^Test [A-Z].*(Failed|Timeout|Exception|SEGFAULT|Child aborted)/ {
    if (name != "") flush_failed($0); name = ""; next
  }
  name == "" { next }
  !/^(Output:|<end of output>|Test time =|Command:|Directory:)/ && !/^-+$/ && !/" (start|end) time: / && !/" time elapsed: / {
    seen++; tail[seen % 6] = $0
  }
  follow > 0 { if (kept < 8) lines[++kept] = $0; follow--; next }
  /: Failure$/ { if (kept < 8) lines[++kept] = $0; follow = 3; next }
  /terminate called|ERROR: [A-Za-z]*Sanitizer|runtime error:|uncaught exception|C\+\+ exception|still running/ {
    if (kept < 8) lines[++kept] = $0; next
  }
  END { if (printed == 0) print "== failure digest: no failed test found in the log" }
' "$log"
