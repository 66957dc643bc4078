#!/usr/bin/env bash
# run.sh TAUPLAN: issue 27 item 5 on the fifth held-out matrix (experiments/testbed/README.md, "The
# fifth held-out matrix three times in a row"): heldout5-matrix.yaml validated twice more, right
# after its first run (../heldout5-first-run/fashion), with the first run's flags (scale 4 from the
# matrix, --queued-window, target 0.8, two seeds), each run calibrating its own testbed afresh;
# `vmstat 5` beside and a timeline; each run's stdout and stderr in run-N.txt, its ranks' own
# .out/.err dropped. Then the three runs' spread:
#   bash experiments/testbed/runs_spread.sh experiments/testbed/data/heldout5-first-run/fashion \
#     experiments/testbed/data/heldout5-three/run-2 experiments/testbed/data/heldout5-three/run-3
# Root; from the repository root; writes beside itself.
source "$(dirname "$0")/../run-start.sh" "$@"
for i in 2 3; do
  echo "$(date -u +%H:%M:%S) run $i starts" >> "$here/timeline.txt"
  "$1" validate experiments/testbed/fashion-mlp.yaml --testbed experiments/testbed/heldout5-matrix.yaml \
    --queued-window --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix tpf- \
    --out "$here/run-$i" > "$here/run-$i.txt" 2>&1
  status=$?
  echo "$(date -u +%H:%M:%S) run $i exit $status" >> "$here/timeline.txt"
  rm -f "$here/run-$i"/runs/*.err "$here/run-$i"/runs/*.out
done
bash experiments/testbed/runs_spread.sh "$here/../heldout5-first-run/fashion" "$here/run-2" \
  "$here/run-3" > "$here/spread.csv" 2> "$here/spread-summary.txt"
