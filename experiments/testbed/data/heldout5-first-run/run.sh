#!/usr/bin/env bash
# run.sh TAUPLAN: the fifth held-out matrix, run once (experiments/testbed/heldout5-matrix.yaml:
# its protocol and bounds). Three validate runs, one per job, each calibrating its own testbed at
# scale 4 with the queued window (validate --queued-window): fashion/ (heldout5-matrix.yaml,
# fashion-mlp.yaml), wide/ (heldout5-wide-matrix.yaml, fashion-mlp-wide.yaml), overlap/
# (heldout5-overlap-matrix.yaml, fashion-mlp-overlap.yaml, target 0.7, one seed); `vmstat 5`
# beside and a timeline; each run's stdout and stderr in NAME.txt, its ranks' own .out/.err
# dropped. Root; from the repository root; writes beside itself. Then, on what it measured,
#   python3 experiments/testbed/heldout_bounds.py experiments/testbed/data/heldout5-first-run \
#     --parts fashion,wide,overlap --ttt-parts fashion --at-most-workers 12
source "$(dirname "$0")/../run-start.sh" "$@"
run_one() {  # NAME JOB MATRIX TARGET SEEDS
  echo "$(date -u +%H:%M:%S) $1 starts" >> "$here/timeline.txt"
  "$tauplan" validate "experiments/testbed/$2" --testbed "experiments/testbed/$3" --queued-window \
    --target-accuracy "$4" --convergence-seeds "$5" --no-plot --testbed-prefix tpf- \
    --out "$here/$1" > "$here/$1.txt" 2>&1
  local status=$?
  echo "$(date -u +%H:%M:%S) $1 exit $status" >> "$here/timeline.txt"
  rm -f "$here/$1"/runs/*.err "$here/$1"/runs/*.out
}
tauplan=$1
run_one fashion fashion-mlp.yaml heldout5-matrix.yaml 0.8 2
run_one wide fashion-mlp-wide.yaml heldout5-wide-matrix.yaml 0.8 2
run_one overlap fashion-mlp-overlap.yaml heldout5-overlap-matrix.yaml 0.7 1
