#!/usr/bin/env bash
# run.sh TAUPLAN: the sixth held-out matrix, run once (experiments/testbed/heldout6-matrix.yaml:
# its protocol and bounds). Three validate runs, one per part, each calibrating its own testbed at
# scale 4 with the queued window (validate --queued-window): fashion/ (heldout6-matrix.yaml,
# fashion-mlp.yaml, target 0.8, 2 seeds), wide/ (heldout6-wide-matrix.yaml, fashion-mlp-wide.yaml,
# 0.8, 2), overlap/ (heldout6-overlap-matrix.yaml, fashion-mlp-overlap.yaml, 0.7, 1); `vmstat 5`
# beside and a timeline; each run's stdout and stderr in PART.txt, its ranks' own .out/.err
# dropped. Root; from the repository root; writes beside itself. Then, on what it measured,
#   python3 experiments/testbed/heldout_bounds.py experiments/testbed/data/heldout6-first-run \
#     --parts fashion,wide,overlap --ttt-parts fashion --at-most-workers 12
source "$(dirname "$0")/../run-start.sh" "$@"
tauplan=$1
out=$here
while read -r part job matrix target seeds; do
  echo "$(date -u +%H:%M:%S) $part starts" >> "$out/timeline.txt"
  "$tauplan" validate "experiments/testbed/$job" --testbed "experiments/testbed/$matrix" \
    --queued-window --target-accuracy "$target" --convergence-seeds "$seeds" --no-plot \
    --testbed-prefix tpf- --out "$out/$part" > "$out/$part.txt" 2>&1 < /dev/null
  echo "$(date -u +%H:%M:%S) $part exit $?" >> "$out/timeline.txt"
  rm -f "$out/$part"/runs/*.err "$out/$part"/runs/*.out
done <<'PARTS'
fashion fashion-mlp.yaml heldout6-matrix.yaml 0.8 2
wide fashion-mlp-wide.yaml heldout6-wide-matrix.yaml 0.8 2
overlap fashion-mlp-overlap.yaml heldout6-overlap-matrix.yaml 0.7 1
PARTS
