#!/usr/bin/env bash
# testbed_check_test.sh: the checks of .ci/testbed_validation.sh on a run's figures, with a
# stand-in for tauplan (no namespaces, no MPI; a few seconds): the stand-in writes a fabricated
# testbed-validation.json into --out, a different one at each call, and exits as told. An
# attempt passes when simgrid CM02's largest round error is at most 30% and its median |error|
# over the contended rows is below analytic's; it fails when simgrid loses to analytic there, when
# the largest is over 30%, when the matrix has no contended row, or when the JSON cannot be read;
# a failed attempt, or one that exits 3 (a median over --max-round-error) or 5 (a measurement the
# machine spoiled), is retried once; any other exit ends it. The pass line prints the largest and both engines' contended
# figures. Exit 1 on a mismatch.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script="$root/.ci/testbed_validation.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# A summary as validate writes it: CM02's largest round error, the number of contended rows,
# CM02's and analytic's median round |error| over them (fractions; "null" for none).
summary() {  # LARGEST CONTENDED CM02 ANALYTIC
  cat <<JSON
{"summary": {"configurations": 3, "contended_configurations": $2,
 "simgrid_cm02": {"max_abs_error_round": $1, "median_abs_error_round_contended": $3},
 "analytic": {"max_abs_error_round": 0.45, "median_abs_error_round_contended": $4}}}
JSON
}

# The stand-in: call N (1, 2) copies $scratch/case/N.json to --out and exits with
# $scratch/case/N.rc (0 when absent); N.json absent: writes nothing.
cat > "$scratch/tauplan" <<'SH'
#!/usr/bin/env bash
set -uo pipefail
case_dir=$(dirname "$0")/case
out=
while [ $# -gt 0 ]; do
  [ "$1" = "--out" ] && out=$2
  shift
done
n=$(( $(cat "$case_dir/calls" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$case_dir/calls"
mkdir -p "$out"
[ -f "$case_dir/$n.json" ] && cp "$case_dir/$n.json" "$out/testbed-validation.json"
echo "validate: wrote $out/testbed-validation.json, .csv" >&2
exit "$(cat "$case_dir/$n.rc" 2>/dev/null || echo 0)"
SH
chmod +x "$scratch/tauplan"

# check NAME EXPECTED-STATUS EXPECTED-CALLS LAST-LINE-PATTERN: runs the script on the case set up
# in $scratch/case and holds its exit status, the stand-in's calls and its last line.
check() {
  local name=$1 want_status=$2 want_calls=$3 pattern=$4
  local output status last calls
  output=$(TESTBED_VALIDATION_OUT="$scratch/out" bash "$script" "$scratch/tauplan" 2>/dev/null)
  status=$?
  last=$(printf '%s\n' "$output" | tail -n 1)
  calls=$(cat "$scratch/case/calls" 2>/dev/null || echo 0)
  # shellcheck disable=SC2053
  if [ "$status" -eq "$want_status" ] && [ "$calls" -eq "$want_calls" ] && [[ "$last" == $pattern ]]; then
    echo "ok: $name: $last"
  else
    echo "FAIL: $name: exit $status (want $want_status), $calls calls (want $want_calls)," \
         "last line: $last" >&2
    failures=$((failures + 1))
  fi
}

new_case() {
  rm -rf "$scratch/case" "$scratch/out"
  mkdir -p "$scratch/case"
}

new_case
summary 0.156 1 0.031 0.418 > "$scratch/case/1.json"
check "simgrid beats analytic on the contended row" 0 1 \
  "testbed validation: passed (attempt 1; simgrid CM02's largest round error 15.6% (at most 30%); on the 1 contended row, round |error| simgrid CM02 3.1% against analytic 41.8%); figures above, files in *"

new_case
summary 0.156 1 0.031 0.028 > "$scratch/case/1.json"
summary 0.150 1 0.030 0.029 > "$scratch/case/2.json"
check "simgrid loses to analytic on the contended row, twice" 1 2 \
  "testbed validation: attempt 2: simgrid CM02's largest round error 15.0% (at most 30%); on the 1 contended row, round |error| simgrid CM02 3.0% against analytic 2.9%: simgrid does not beat analytic where flows share a link"

new_case
summary 0.156 1 0.031 0.031 > "$scratch/case/1.json"
summary 0.156 1 0.031 0.031 > "$scratch/case/2.json"
check "a tie is not a win" 1 2 "*: simgrid does not beat analytic where flows share a link"

new_case
summary 0.156 1 0.031 0.028 > "$scratch/case/1.json"
summary 0.120 2 0.025 0.402 > "$scratch/case/2.json"
check "simgrid loses, then wins on the retry" 0 2 \
  "testbed validation: passed (attempt 2; simgrid CM02's largest round error 12.0% (at most 30%); on the 2 contended rows (median), round |error| simgrid CM02 2.5% against analytic 40.2%); figures above, files in *"

new_case
summary 0.312 1 0.031 0.418 > "$scratch/case/1.json"
summary 0.305 1 0.031 0.418 > "$scratch/case/2.json"
check "the largest over 30%, twice" 1 2 "testbed validation: attempt 2: *: the largest exceeds 30%"

new_case
summary 0.156 0 null null > "$scratch/case/1.json"
summary 0.156 0 null null > "$scratch/case/2.json"
check "no contended row" 1 2 "testbed validation: attempt 2: *; no contended row to hold CM02 against analytic on"

new_case
echo 3 > "$scratch/case/1.rc"
summary 0.156 1 0.031 0.418 > "$scratch/case/2.json"
check "median over --max-round-error (exit 3), then a pass" 0 2 "testbed validation: passed (attempt 2; *"

new_case
echo 5 > "$scratch/case/1.rc"
summary 0.156 1 0.031 0.418 > "$scratch/case/2.json"
check "a spoiled measurement (exit 5), then a pass" 0 2 "testbed validation: passed (attempt 2; *"

new_case
echo 4 > "$scratch/case/1.rc"
check "a lost rank (exit 4): no retry" 4 1 "testbed validation: attempt 1 exited 4"

new_case
echo '{"summary": {}}' > "$scratch/case/1.json"
check "figures that cannot be read: no retry" 1 1 "testbed validation: attempt 1: cannot read the figures of *"

exit $((failures > 0))
