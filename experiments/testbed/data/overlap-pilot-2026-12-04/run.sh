#!/usr/bin/env bash
# run.sh TAUPLAN: the overlap pilot (matrix.yaml beside this file), run once: two validate runs
# over the same matrix, first with the overlap job (fashion-mlp-overlap.yaml), then with the plain
# job (fashion-mlp.yaml), the fourth matrix's flags, one seed for time to target, `vmstat 5`
# beside; stdout and stderr in overlap.txt and plain.txt, results in out-overlap/ and out-plain/,
# the ranks' own .out/.err dropped. Root; from the repository root; writes into this folder.
{ [ $# -eq 1 ] && [ -x "$1" ]; } || { echo "usage: run.sh TAUPLAN (an executable)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$here/vmstat-5s.txt" & sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
for job in overlap plain; do
  file=experiments/testbed/fashion-mlp.yaml
  [ "$job" = overlap ] && file=experiments/testbed/fashion-mlp-overlap.yaml
  echo "$(date -u +%H:%M:%S) $job starts" >> "$here/timeline.txt"
  "$1" validate "$file" --testbed "$here/matrix.yaml" --queued-window --target-accuracy 0.8 \
    --convergence-seeds 1 --no-plot --testbed-prefix tpo- --out "$here/out-$job" \
    > "$here/$job.txt" 2>&1
  echo "$(date -u +%H:%M:%S) $job exit $?" >> "$here/timeline.txt"
  rm -f "$here/out-$job"/runs/*.err "$here/out-$job"/runs/*.out
done
