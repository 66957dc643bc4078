#!/usr/bin/env bash
# runs_spread_test.sh: experiments/testbed/runs_spread.sh against spreads computed by hand: two
# runs of two configurations (measured, analytic and CM02 rounds), a configuration missing from
# one run left out, a name standing twice in each run joined by its occurrence (the first row with
# the first, the second with the second), a missing folder refused with exit 2.
set -euo pipefail
script="$(dirname "$0")/../../experiments/testbed/runs_spread.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/a" "$dir/b"
header='config,group,strategy,workers,round_measured_s,round_analytic_s,round_simgrid_cm02_s'
printf '%s\n"g: one, two K=2",g,sync,2,0.100,0.200,0.400\n"g: K=4",g,sync,4,1.0,2.0,4.0\n"g: only in a",g,sync,1,1,1,1\n"g: ring",g,sync,8,1,1,1\n"g: ring",g,sync,8,2,2,2\n' \
  "$header" > "$dir/a/testbed-validation.csv"
printf '%s\n"g: K=4",g,sync,4,1.005,2.2,4.0\n"g: ring",g,sync,8,1.005,1.02,1.03\n"g: one, two K=2",g,sync,2,0.110,0.200,0.300\n"g: ring",g,sync,8,2.1,2.2,2.3\n' \
  "$header" > "$dir/b/testbed-validation.csv"
out=$(bash "$script" "$dir/a" "$dir/b" 2> "$dir/summary")
expected='config,runs,measured_spread_pct,analytic_spread_pct,cm02_spread_pct
"g: one, two K=2",2,10.00,0.00,33.33
"g: K=4",2,0.50,10.00,0.00
"g: ring",2,0.50,2.00,3.00
"g: ring #2",2,5.00,10.00,15.00'
[ "$out" = "$expected" ] || { echo "unexpected output:"; echo "$out"; exit 1; }
grep -q 'measured round: largest spread 10.00% (g: one, two K=2); 2 of 4 configurations within 1%' "$dir/summary" \
  || { echo "unexpected summary:"; cat "$dir/summary"; exit 1; }
grep -q 'cm02 round: largest spread 33.33% (g: one, two K=2); 1 of 4' "$dir/summary" \
  || { echo "unexpected summary:"; cat "$dir/summary"; exit 1; }
set +e
bash "$script" "$dir/a" "$dir/missing" > /dev/null 2> "$dir/err"
rc=$?
set -e
[ $rc -eq 2 ] || { echo "a missing folder: exit $rc, expected 2"; exit 1; }
grep -q "no $dir/missing/testbed-validation.csv" "$dir/err" || { cat "$dir/err"; exit 1; }
echo "runs_spread_test: ok"
