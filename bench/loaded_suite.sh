#!/usr/bin/env bash
# The README's test command, three times in a row, while two busy loops keep both cores busy: the suite must
# stay green on a loaded machine (generous budgets for healthy children, no timing assertions). Not run by CI.
#   bench/loaded_suite.sh [PYTHON]      (default: python3; prints one summary line per run)
set -uo pipefail
cd "$(dirname "$0")/.."
py="${1:-python3}"
python3 -c "while 1: pass" & busy1=$!
python3 -c "while 1: pass" & busy2=$!
trap 'kill $busy1 $busy2 2>/dev/null' EXIT
failed=0
for run in 1 2 3; do
  log=$(mktemp)
  "$py" -m pytest -q -n 3 -p no:cacheprovider >"$log" 2>&1
  code=$?
  echo "run $run: exit $code, $(tail -1 "$log"), load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$code" -eq 0 ]; then
    rm -f "$log"
  else
    failed=1
    grep -E '^(FAILED|ERROR)' "$log"
    echo "  (the whole output: $log)"
  fi
done
exit $failed
