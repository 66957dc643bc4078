#!/usr/bin/env bash
# run.sh TAUPLAN: the fifth held-out matrix's wide rows (heldout5-wide-matrix.yaml: row 10, the
# ring of 2, and row 11, a striped ring of 4 as control) again, after the two-way exchange change
# (exec sends a ring of 2's chunks as eager pieces, the engines charge one latency): as
# ../../heldout5-first-run/run.sh ran its `wide` part (validate --queued-window, target 0.8, 2
# seeds, scale 4 from the matrix). Post hoc, training-set: the change was made looking at row 10.
# Root; from the repository root; writes beside itself.
source "$(dirname "$0")/../../run-start.sh" "$@"
echo "$(date -u +%H:%M:%S) wide starts" >> "$here/timeline.txt"
"$1" validate experiments/testbed/fashion-mlp-wide.yaml \
  --testbed experiments/testbed/heldout5-wide-matrix.yaml --queued-window --target-accuracy 0.8 \
  --convergence-seeds 2 --no-plot --testbed-prefix tpf- --out "$here/wide" > "$here/wide.txt" 2>&1
status=$?
echo "$(date -u +%H:%M:%S) wide exit $status" >> "$here/timeline.txt"
rm -f "$here/wide"/runs/*.err "$here/wide"/runs/*.out
