# Sourced by scripts/fuzz.sh (and its test): the per-target time cap.
#
# fuzz_cap SECONDS WORKERS TARGETS DEADLINE NOW prints the seconds each
# target may fuzz: SECONDS, lowered to the target's share of the time left
# before DEADLINE (targets run WORKERS at a time, so each gets
# left * WORKERS / TARGETS), but never under 15 s. An empty DEADLINE leaves
# SECONDS as it is.
fuzz_cap() {
  local seconds=$1 workers=$2 targets=$3 deadline=$4 now=$5
  if [ -z "$deadline" ]; then
    echo "$seconds"
    return
  fi
  local share=$(( (deadline - now) * workers / targets ))
  [ "$share" -lt 15 ] && share=15
  [ "$share" -lt "$seconds" ] && seconds=$share
  echo "$seconds"
}
