#!/usr/bin/env bash
# run-steps.sh: tests/exec/testbed/ring_steps.cpp (a bare MPI ring all-reduce, every step timed
# on every rank on the machine's one CLOCK_MONOTONIC; the build's testbed_ring_steps) on
# testbed-fattree3-2to1.xml: the ring of 3 across the leaves
# (hops of 2, 4 and 4 ms one way; chunks of 313.5 KB: rendezvous), the same ring inside leaf a
# (hops of 1 ms), and the ring of 16 in leaf order (chunks of 58.8 KB: eager), 40 rounds each,
# the chunks of the fashion MLP's 235,147 floats. Usage (root, nothing else running):
#   bash experiments/testbed/data/ring-gap-diagnosis/run-steps.sh BUILD/cli/tauplan [OUT]
set -euo pipefail
tauplan=$(realpath "${1:?usage: run-steps.sh TAUPLAN [OUT]}")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here}
repo=$(cd "$here/../../../.." && pwd)
cd "$repo"
prefix=tpd-
mkdir -p "$out"
bin=$(dirname "$tauplan")/../tests/exec/testbed/testbed_ring_steps  # built beside tauplan
[ -x "$bin" ] || { echo "run-steps.sh: no $bin (build the target testbed_ring_steps)" >&2; exit 2; }
"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true
trap '"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true' EXIT
"$tauplan" testbed up platforms/testbed-fattree3-2to1.xml --prefix "$prefix" > "$out/steps-testbed-up.txt"
run() {  # name hosts chunk_floats
  echo "$(date -u +%H:%M:%S) $1"
  "$tauplan" testbed run --prefix "$prefix" --hosts "$2" -- "$bin" "$3" 40 > "$out/steps-$1.txt" \
    2> "$out/steps-$1.err"
  gzip -9f "$out/steps-$1.txt"
}
for rep in 1 2; do
  run "ring3-leaves-$rep" a-h2,b-h2,c-h2 78383
  run "ring3-leaf-a-$rep" a-h0,a-h1,a-h2 78383
  run "ring16-$rep" a-h0,a-h1,a-h2,a-h3,a-h4,a-h5,b-h0,b-h1,b-h2,b-h3,b-h4,b-h5,c-h0,c-h1,c-h2,c-h3 14697
done
echo "$(date -u +%H:%M:%S) done"
