#!/usr/bin/env bash
# validate_repeatedly.sh TAUPLAN MATRIX PREFIX OUT [RUNS]: issue 27 item 5's check that fresh
# calibrations repeat. Runs `TAUPLAN validate experiments/testbed/fashion-mlp.yaml --testbed
# MATRIX` RUNS times (default 3) back to back, each with its own network and compute calibrations
# (namespaces named PREFIX...), into OUT/run-N (the console into OUT/run-N.txt, the start and
# exit of each run into OUT/timeline.txt, `vmstat 5` beside them into OUT/vmstat-5s.txt), drops
# the ranks' raw stdout/stderr files, then writes runs_spread.sh of the runs to OUT/spread.csv
# and its summary to OUT/spread-summary.txt. Root; run from the repository root; nothing else
# should run meanwhile (the hosts share this machine's cores with the fabric).
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: validate_repeatedly.sh TAUPLAN MATRIX PREFIX OUT [RUNS]" >&2; exit 2; }
bin=$1 matrix=$2 prefix=$3 runs=${5:-3}
[ -x "$bin" ] || { echo "validate_repeatedly.sh: TAUPLAN: $bin is not an executable" >&2; exit 2; }
[ -f "$matrix" ] || { echo "validate_repeatedly.sh: MATRIX: no file $matrix" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "validate_repeatedly.sh: RUNS: expected a positive count, got $runs" >&2; exit 2; }
mkdir -p "$4" && out=$(cd "$4" && pwd)
vmstat 5 > "$out/vmstat-5s.txt" &
vm=$!
trap 'kill $vm 2>/dev/null' EXIT
dirs=()
for i in $(seq 1 "$runs"); do
  echo "$(date -u +%H:%M:%S) run $i starts" >> "$out/timeline.txt"
  "$bin" validate experiments/testbed/fashion-mlp.yaml --testbed "$matrix" \
    --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix "$prefix" \
    --out "$out/run-$i" > "$out/run-$i.txt" 2>&1
  rc=$?
  echo "$(date -u +%H:%M:%S) run $i exit $rc" >> "$out/timeline.txt"
  rm -f "$out/run-$i"/runs/*.err "$out/run-$i"/runs/*.out
  dirs+=("$out/run-$i")
done
[ "$runs" -ge 2 ] || exit 0
bash experiments/testbed/runs_spread.sh "${dirs[@]}" > "$out/spread.csv" 2> "$out/spread-summary.txt"
rc=$?
echo "$(date -u +%H:%M:%S) spread exit $rc" >> "$out/timeline.txt"
