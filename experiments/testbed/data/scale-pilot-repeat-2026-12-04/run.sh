#!/usr/bin/env bash
# run.sh TAUPLAN: the scale pilot repeated, with a group at scale 4 (matrix.yaml beside this
# file), run once: one validate run over the three groups with the fourth matrix's flags,
# `vmstat 5` beside, stdout and stderr in run.txt, the ranks' own .out/.err dropped. Root; from
# the repository root; writes beside itself.
tauplan=${1:-}
{ [ $# -eq 1 ] && [ -x "$tauplan" ]; } || { echo "usage: run.sh TAUPLAN (an executable)" >&2; exit 2; }
dir=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$dir/vmstat-5s.txt" &
trap "kill $! 2>/dev/null" EXIT
echo "$(date -u +%H:%M:%S) starts" > "$dir/timeline.txt"
"$tauplan" validate experiments/testbed/fashion-mlp.yaml --testbed "$dir/matrix.yaml" \
  --queued-window --target-accuracy 0.8 --convergence-seeds 2 --no-plot \
  --testbed-prefix tpr- --out "$dir/out" > "$dir/run.txt" 2>&1
echo "$(date -u +%H:%M:%S) exit $?" >> "$dir/timeline.txt"
rm -f "$dir"/out/runs/*.err "$dir"/out/runs/*.out
