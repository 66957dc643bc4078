#!/usr/bin/env bash
# run.sh TAUPLAN: the third held-out matrix, run once (experiments/testbed/heldout3-matrix.yaml:
# its protocol and bounds; README.md, "The third held-out matrix"): validate on heldout3-matrix.yaml
# with fashion-mlp.yaml into fashion/, then on heldout3-wide-matrix.yaml with fashion-mlp-wide.yaml
# into wide/, `vmstat 5` beside, a timeline of both. Root; run from the repository root; writes
# beside itself.
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: run.sh TAUPLAN (an executable)" >&2; exit 2; }
out=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$out/vmstat-5s.txt" &
vm=$!
trap 'kill $vm 2>/dev/null' EXIT
for pair in fashion:fashion-mlp.yaml:heldout3-matrix.yaml wide:fashion-mlp-wide.yaml:heldout3-wide-matrix.yaml; do
  IFS=: read -r name job matrix <<< "$pair"
  echo "$(date -u +%H:%M:%S) $name starts" >> "$out/timeline.txt"
  "$1" validate "experiments/testbed/$job" --testbed "experiments/testbed/$matrix" \
    --target-accuracy 0.8 --convergence-seeds 2 --no-plot --testbed-prefix tpz- \
    --out "$out/$name" > "$out/$name.txt" 2>&1
  rc=$?
  echo "$(date -u +%H:%M:%S) $name exit $rc" >> "$out/timeline.txt"
  rm -f "$out/$name"/runs/*.err "$out/$name"/runs/*.out
done
