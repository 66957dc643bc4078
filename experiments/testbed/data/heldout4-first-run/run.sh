#!/usr/bin/env bash
# run.sh TAUPLAN: the fourth held-out matrix, run once (experiments/testbed/heldout4-matrix.yaml:
# its protocol and bounds). Each network calibration measures the queued window (validate
# --queued-window). Two validate runs, one per model (fashion/ with heldout4-matrix.yaml,
# wide/ with heldout4-wide-matrix.yaml), with `vmstat 5` beside and a timeline; each run's
# stdout and stderr in NAME.txt, its ranks' own .out/.err dropped. Root; from the repository
# root; writes beside itself. Then, on what it measured, no-window-replay.sh and
#   python3 experiments/testbed/heldout_bounds.py experiments/testbed/data/heldout4-first-run \
#     --at-most-workers 12
source "$(dirname "$0")/../run-start.sh" "$@"
run_one() {  # NAME JOB MATRIX
  echo "$(date -u +%H:%M:%S) $1 starts" >> "$here/timeline.txt"
  "$tauplan" validate "experiments/testbed/$2" --testbed "experiments/testbed/$3" --queued-window \
    --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix tpz- \
    --out "$here/$1" > "$here/$1.txt" 2>&1
  echo "$(date -u +%H:%M:%S) $1 exit $?" >> "$here/timeline.txt"
  rm -f "$here/$1"/runs/*.err "$here/$1"/runs/*.out
}
tauplan=$1
run_one fashion fashion-mlp.yaml heldout4-matrix.yaml
run_one wide fashion-mlp-wide.yaml heldout4-wide-matrix.yaml
