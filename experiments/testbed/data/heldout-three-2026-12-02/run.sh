#!/usr/bin/env bash
# run.sh TAUPLAN: the measurement of experiments/testbed/README.md, "The held-out matrix three
# times in a row" (protocol written before it ran): heldout-matrix.yaml validated three times back
# to back, each run with fresh network and compute calibrations, then runs_spread.sh over the
# three. Root; run from the repository root; writes beside itself.
set -uo pipefail
bin=$1
out=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$out/vmstat-5s.txt" &
vm=$!
trap 'kill $vm 2>/dev/null' EXIT
for i in 1 2 3; do
  echo "$(date -u +%H:%M:%S) run $i starts" >> "$out/timeline.txt"
  "$bin" validate experiments/testbed/fashion-mlp.yaml \
    --testbed experiments/testbed/heldout-matrix.yaml \
    --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix tph- \
    --out "$out/run-$i" > "$out/run-$i.txt" 2>&1
  rc=$?
  echo "$(date -u +%H:%M:%S) run $i exit $rc" >> "$out/timeline.txt"
  rm -f "$out/run-$i"/runs/*.err "$out/run-$i"/runs/*.out
done
bash experiments/testbed/runs_spread.sh "$out/run-1" "$out/run-2" "$out/run-3" \
  > "$out/spread.csv" 2> "$out/spread-summary.txt"
echo "$(date -u +%H:%M:%S) spread exit $?" >> "$out/timeline.txt"
