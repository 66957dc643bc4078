#!/usr/bin/env bash
# run.sh TAUPLAN: issue 27 item 3 on main after the latency jitter (experiments/testbed/README.md,
# "The network found by probing, on main again"): the main matrix (matrix.yaml: both shipped
# testbeds) and the first held-out matrix (heldout-matrix.yaml: the fat trees at 2:1 and 4:1),
# each validated once with `--probe-network`, one after the other, fresh calibrations and probes;
# `vmstat 5` beside, a timeline, each matrix's console in NAME.txt (its ranks' .out/.err
# dropped). Root; from the repository root; nothing else running.
source "$(dirname "$0")/../run-start.sh" "$@"
for pair in matrix:tpm- heldout-matrix:tph-; do
  name=${pair%%:*}
  echo "$(date -u +%H:%M:%S) $name starts" >> "$here/timeline.txt"
  "$1" validate experiments/testbed/fashion-mlp.yaml --testbed "experiments/testbed/$name.yaml" \
    --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix "${pair##*:}" \
    --probe-network --out "$here/$name" > "$here/$name.txt" 2>&1 < /dev/null
  echo "$(date -u +%H:%M:%S) $name exit $?" >> "$here/timeline.txt"
  find "$here/$name/runs" \( -name '*.err' -o -name '*.out' \) -delete
done
