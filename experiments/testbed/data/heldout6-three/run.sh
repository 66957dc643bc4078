#!/usr/bin/env bash
# run.sh TAUPLAN: issue 27 item 5 on the sixth held-out matrix after the latency jitter
# (experiments/testbed/README.md, "Near-ties ... three runs of the sixth matrix"): the `fashion`
# part of heldout6-first-run/run.sh (heldout6-matrix.yaml with fashion-mlp.yaml, the same flags)
# validated three times back to back, each run bringing the testbed up and calibrating it afresh;
# `vmstat 5` beside, a timeline, each run's output in run-N.txt (its ranks' .out/.err dropped),
# then the three runs' spread (spread.csv, spread-summary.txt). Root; from the repository root.
source "$(dirname "$0")/../run-start.sh" "$@"
flags=(--queued-window --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix tpf-)
runs=()
for n in 1 2 3; do
  echo "$(date -u +%H:%M:%S) run $n starts" >> "$here/timeline.txt"
  "$1" validate experiments/testbed/fashion-mlp.yaml --testbed experiments/testbed/heldout6-matrix.yaml \
    "${flags[@]}" --out "$here/run-$n" > "$here/run-$n.txt" 2>&1 < /dev/null
  echo "$(date -u +%H:%M:%S) run $n exit $?" >> "$here/timeline.txt"
  find "$here/run-$n/runs" \( -name '*.err' -o -name '*.out' \) -delete
  runs+=("$here/run-$n")
done
bash experiments/testbed/runs_spread.sh "${runs[@]}" > "$here/spread.csv" 2> "$here/spread-summary.txt"
