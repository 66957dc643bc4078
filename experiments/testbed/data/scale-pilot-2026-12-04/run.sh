#!/usr/bin/env bash
# run.sh TAUPLAN: the scale pilot (matrix.yaml beside this file), run once: one validate run over
# both groups with the fourth matrix's flags, `vmstat 5` beside, stdout and stderr in run.txt,
# the ranks' own .out/.err dropped. Root; from the repository root; writes beside itself.
# (As run, with its first lines joined afterwards for the architecture test's six-line rule.)
{ [ $# -eq 1 ] && [ -x "$1" ]; } || { echo "usage: run.sh TAUPLAN (an executable)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$here/vmstat-5s.txt" & sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
date -u +"%H:%M:%S starts" > "$here/timeline.txt"
"$1" validate experiments/testbed/fashion-mlp.yaml --testbed "$here/matrix.yaml" --queued-window \
  --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix tps- \
  --out "$here/out" > "$here/run.txt" 2>&1
echo "$(date -u +%H:%M:%S) exit $?" >> "$here/timeline.txt"
rm -f "$here"/out/runs/*.err "$here"/out/runs/*.out
