#!/usr/bin/env bash
# run.sh TAUPLAN [DIR TARGET]: the overlap pilot (matrix.yaml in DIR, by default this file's
# folder; target accuracy TARGET, by default 0.8), run once: two validate runs
# over the same matrix, first with the overlap job (fashion-mlp-overlap.yaml), then with the plain
# job (fashion-mlp.yaml), the fourth matrix's flags, one seed for time to target, `vmstat 5`
# beside; stdout and stderr in overlap.txt and plain.txt, results in out-overlap/ and out-plain/,
# the ranks' own .out/.err dropped. Root; from the repository root; writes into DIR. The sized
# follow-up (../overlap-sized-2026-12-04/) runs it with its folder and target 0.7. (DIR and
# TARGET added after the pilot's run: the same commands.)
{ { [ $# -eq 1 ] || [ $# -eq 3 ]; } && [ -x "$1" ]; } ||
  { echo "usage: run.sh TAUPLAN [DIR TARGET] (TAUPLAN an executable)" >&2; exit 2; }
here=${2:-$(cd "$(dirname "$0")" && pwd)}
target=${3:-0.8}
vmstat 5 > "$here/vmstat-5s.txt" & sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
for job in overlap plain; do
  file=experiments/testbed/fashion-mlp.yaml
  [ "$job" = overlap ] && file=experiments/testbed/fashion-mlp-overlap.yaml
  echo "$(date -u +%H:%M:%S) $job starts" >> "$here/timeline.txt"
  "$1" validate "$file" --testbed "$here/matrix.yaml" --queued-window --target-accuracy "$target" \
    --convergence-seeds 1 --no-plot --testbed-prefix tpo- --out "$here/out-$job" \
    > "$here/$job.txt" 2>&1
  echo "$(date -u +%H:%M:%S) $job exit $?" >> "$here/timeline.txt"
  rm -f "$here/out-$job"/runs/*.err "$here/out-$job"/runs/*.out
done
