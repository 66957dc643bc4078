#!/usr/bin/env bash
# run.sh TAUPLAN [DIR PREFIX]: the scale pilot (matrix.yaml in DIR, by default this file's folder;
# testbed prefix PREFIX, by default tps-), run once: one validate run over its groups with the
# fourth matrix's flags, `vmstat 5` beside, stdout and stderr in DIR/run.txt, the ranks' own
# .out/.err dropped. Root; from the repository root; writes into DIR. The repeat
# (../scale-pilot-repeat-2026-12-04/run.sh) runs it with its own folder and prefix tpr-.
# (As run, with its first lines joined and DIR, PREFIX added afterwards: the same commands.)
{ { [ $# -eq 1 ] || [ $# -eq 3 ]; } && [ -x "$1" ]; } ||
  { echo "usage: run.sh TAUPLAN [DIR PREFIX] (TAUPLAN an executable)" >&2; exit 2; }
here=${2:-$(cd "$(dirname "$0")" && pwd)}
prefix=${3:-tps-}
vmstat 5 > "$here/vmstat-5s.txt" & sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
date -u +"%H:%M:%S starts" > "$here/timeline.txt"
"$1" validate experiments/testbed/fashion-mlp.yaml --testbed "$here/matrix.yaml" --queued-window \
  --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix "$prefix" \
  --out "$here/out" > "$here/run.txt" 2>&1
echo "$(date -u +%H:%M:%S) exit $?" >> "$here/timeline.txt"
rm -f "$here"/out/runs/*.err "$here"/out/runs/*.out
