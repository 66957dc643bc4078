#!/usr/bin/env bash
# validate_repeatedly_test.sh: experiments/testbed/validate_repeatedly.sh's plumbing, with a
# stand-in for tauplan that writes a one-row testbed-validation.csv whose rounds grow with each
# call: three runs land in OUT/run-1..3, the timeline has each start and exit, spread.csv holds the
# row's spread across the three (computed by hand); failing validations' statuses reach the
# timeline; bad arguments exit 2 with one line.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/fake-tauplan" <<'FAKE'
#!/usr/bin/env bash
# Writes --out DIR/testbed-validation.csv; the n-th call's rounds are 1.0 + 0.01 n (n = 1, 2, 3).
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$out/runs"; touch "$out/runs/rank0.out"
[ -z "${FAKE_FAILS:-}" ] || exit 3  # a validate that fails writes no table
n=$(($(cat "$(dirname "$0")/calls" 2>/dev/null || echo 0) + 1)); echo $n > "$(dirname "$0")/calls"
r=$(awk -v n=$n 'BEGIN { printf "%.2f", 1 + 0.01 * n }')
printf 'config,round_measured_s,round_analytic_s,round_simgrid_cm02_s\n"g: K=2",%s,%s,%s\n' $r $r $r \
  > "$out/testbed-validation.csv"
FAKE
chmod +x "$dir/fake-tauplan"
cd "$root"
bash experiments/testbed/validate_repeatedly.sh "$dir/fake-tauplan" experiments/testbed/matrix.yaml \
  tpx- "$dir/out" 3
for i in 1 2 3; do
  [ -f "$dir/out/run-$i/testbed-validation.csv" ] || { echo "run $i missing"; exit 1; }
  [ ! -e "$dir/out/run-$i/runs/rank0.out" ] || { echo "run $i kept the ranks' output"; exit 1; }
  grep -q "run $i exit 0" "$dir/out/timeline.txt" || { cat "$dir/out/timeline.txt"; exit 1; }
done
# 1.03 / 1.01 - 1 = 1.98%
expected='config,runs,measured_spread_pct,analytic_spread_pct,cm02_spread_pct
"g: K=2",3,1.98,1.98,1.98'
[ "$(cat "$dir/out/spread.csv")" = "$expected" ] || { cat "$dir/out/spread.csv"; exit 1; }
grep -q 'cm02 round: largest spread 1.98% (g: K=2); 0 of 1' "$dir/out/spread-summary.txt"
grep -q 'spread exit 0' "$dir/out/timeline.txt" || { cat "$dir/out/timeline.txt"; exit 1; }
# Failing validations: the timeline carries their status and runs_spread.sh's (no tables: 2).
FAKE_FAILS=1 bash experiments/testbed/validate_repeatedly.sh "$dir/fake-tauplan" \
  experiments/testbed/matrix.yaml tpx- "$dir/failing" 2
grep -q 'run 2 exit 3' "$dir/failing/timeline.txt" && grep -q 'spread exit 2' "$dir/failing/timeline.txt" \
  || { cat "$dir/failing/timeline.txt"; exit 1; }
refused() {  # refused EXPECTED-TEXT ARGS...: exit 2 and one line naming the argument
  local want=$1 rc=0
  shift
  bash experiments/testbed/validate_repeatedly.sh "$@" > /dev/null 2> "$dir/err" || rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q "$want" "$dir/err" \
    || { echo "args $*: exit $rc, stderr:"; cat "$dir/err"; exit 1; }
}
refused usage
refused "TAUPLAN: $dir/none is not an executable" "$dir/none" experiments/testbed/matrix.yaml p "$dir/o"
refused "MATRIX: no file $dir/none.yaml" "$dir/fake-tauplan" "$dir/none.yaml" p "$dir/o"
refused "RUNS: expected a positive count, got 0" "$dir/fake-tauplan" experiments/testbed/matrix.yaml p "$dir/o" 0
echo "validate_repeatedly_test: ok"
