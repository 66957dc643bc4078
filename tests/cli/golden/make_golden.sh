#!/usr/bin/env bash
# make_golden.sh TAUPLAN: records the outputs that golden_test.cpp compares against.
#
# Run once with the binary of the commit whose behaviour is the reference (the goldens in this
# folder were made with commit 8dda4c8, before the Engine/Strategy/study redesign), from the
# repository root. Each case is one line of cases.txt: NAME VERB [ARGS...]; the JSON output goes
# to NAME.json. Timing fields of measure are compared loosely by the test, everything else
# exactly.
#
# Deliberate changes since 8dda4c8, applied to the recorded files by hand and named here:
# - issue 14: a row's speedup is null, not 0, when the job has no baseline (single) row;
# - issue 15: the measure golden is re-recorded with the OpenBLAS CPU step (its curves differ
#   from 8dda4c8's in the last digits: a change of floating-point summation order).
# - issue 24: the simulate goldens are re-recorded with memoised private ops (sim/private_links.hpp):
#   rows gain flows_memoised and flows_represented, flows_started / flows_reused count fewer
#   flows run, and times moved by at most 2.4e-12 relative (a sleep of the memoised time instead
#   of the same flows run again: summation order); every other field is unchanged.
# - issue 23: all re-recorded when the context gained `compute` (where each worker's compute time
#   comes from) and the shipped platforms a compute_source prop (a new platform_hash); predict and
#   simulate results are unchanged, measure's differ as two runs of it do (compared loosely).
set -euo pipefail
tauplan=$1
here=$(dirname "$0")
while read -r name verb args; do
  [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  # shellcheck disable=SC2086
  "$tauplan" "$verb" $args --json > "$here/$name.json" 2> /dev/null
  echo "recorded $name"
done < "$here/cases.txt"
