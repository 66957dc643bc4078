#!/usr/bin/env bash
# run_training.sh: real tensor- and pipeline-parallel training of fashion-mlp (784-256-128-10) on
# Fashion-MNIST to 85% test accuracy, 1, 2 and 4 workers, threads and MPI ranks, each run
# `repeats` times (default 3), by `tauplan measure` on strategy mesh (the layout's Plan, run by
# exec's layout trainer; fashion-mlp-layouts.yaml here with the layout as flags); writes
# results/parallelism/training/<layout>-<transport>-<i>.json and prints one CSV line per run.
# Usage (from the repository root, after a build):
#   bash experiments/parallelism/run_training.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-3}
bin="$build/cli/tauplan"
out=results/parallelism/training
mkdir -p "$out"
common=(measure experiments/parallelism/fashion-mlp-layouts.yaml --strategies mesh --batch 64
        --learning-rate 0.1 --target-accuracy 0.85 --max-steps 20000 --eval-every 100
        --eval-samples 0 --seed 1 --timing concurrent --json)
# name|flags
layouts=(
  "d1-t1-p1|"
  "d1-t2-p1|--tensor-parallel 2"
  "d1-t1-p2-m4|--pipeline-parallel 2 --micro-batches 4"
  "d1-t1-p2-m4-gpipe|--pipeline-parallel 2 --micro-batches 4 --pipeline-schedule gpipe"
  "d2-t1-p1|--data-parallel 2"
  "d1-t4-p1|--tensor-parallel 4"
  "d2-t1-p2-m4|--data-parallel 2 --pipeline-parallel 2 --micro-batches 4"
  "d1-t2-p2-m4|--tensor-parallel 2 --pipeline-parallel 2 --micro-batches 4"
  "d2-t2-p1|--data-parallel 2 --tensor-parallel 2"
)
echo "layout,transport,repeat,workers,steps,accuracy,reached,training_s,step_ms"
for entry in "${layouts[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  workers=$(( $(echo "$name" | sed -E 's/d([0-9]+)-t([0-9]+)-p([0-9]+).*/\1*\2*\3/') ))
  case "$flags" in *--micro-batches*) ;; *) flags="$flags --micro-batches 1" ;; esac
  for transport in threads mpi; do
    for i in $(seq 1 "$repeats"); do
      file="$out/$name-$transport-$i.json"
      # shellcheck disable=SC2086
      if [ "$transport" = threads ]; then
        "$bin" "${common[@]}" --workers "$workers" $flags > "$file"
      else
        mpirun --allow-run-as-root --oversubscribe -np "$workers" \
          "$bin" "${common[@]}" --workers "$workers" $flags > "$file"
      fi
      python3 - "$file" "$name" "$transport" "$i" "$workers" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
# One rank under mpirun trains on threads (there is no message to send).
expected = sys.argv[3] if int(sys.argv[5]) > 1 else "threads"
assert r["strategy"] == "mesh" and r["communicator"] == expected, (r["strategy"], r["communicator"])
# training_s: rank 0's summed step times (evaluations left out); step_ms: the median over steps
# of the slowest rank's step.
print(f"{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{sys.argv[5]},{r['steps']},"
      f"{r['final_accuracy']:.4f},{str(r['reached_target']).lower()},{r['total_s']:.3f},"
      f"{1e3 * r['round_median_s']:.3f}")
PY
    done
  done
done
