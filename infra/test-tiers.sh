#!/usr/bin/env bash
# Runs the named test tiers (make test-<tier>) in turn and says how long each took: after
# each tier, and all of them at the end or after the first that fails, which ends the run.
set -uo pipefail

durations=()
started_all=$(date +%s)

summary() {
  printf '[iopipe] tier durations:\n'
  printf '  %s\n' "${durations[@]}"
  printf '  %-8s %5d s\n' total $(( $(date +%s) - started_all ))
}

# The unit tier's steps (cargo, Maven, pytest without services) run two at a time, each
# step's output kept whole; the other tiers' tests share services or time I/O.
parallel_steps() {
  [ "$1" = unit ] && echo "-j2 --output-sync=target"
}

for tier in "$@"; do
  printf '[iopipe] tier %s: make test-%s\n' "$tier" "$tier"
  started=$(date +%s)
  make --no-print-directory $(parallel_steps "$tier") "test-$tier"
  status=$?
  took=$(( $(date +%s) - started ))
  result=$([ "$status" -eq 0 ] && echo passed || echo "FAILED (exit $status)")
  durations+=("$(printf '%-8s %5d s  %s' "$tier" "$took" "$result")")
  printf '[iopipe] tier %s %s in %d s\n' "$tier" "$result" "$took"
  if [ "$status" -ne 0 ]; then
    summary
    exit "$status"
  fi
done
summary
