#!/usr/bin/env bash
# run_training.sh: real tensor- and pipeline-parallel training of fashion-mlp (784-256-128-10) on
# Fashion-MNIST to 85% test accuracy, 1, 2 and 4 workers, threads and MPI ranks, each run
# `repeats` times (default 3); writes results/parallelism/training/<layout>-<transport>-<i>.json
# and prints one CSV line per run. Usage (from the repository root, after a build):
#   bash experiments/parallelism/run_training.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-3}
bin="$build/exec/tauplan_model_parallel"
out=results/parallelism/training
mkdir -p "$out"
common=(--batch 64 --lr 0.1 --target 0.85 --max-steps 20000 --eval-every 100 --seed 1 --json)
# name|flags
layouts=(
  "d1-t1-p1|"
  "d1-t2-p1|--tensor 2"
  "d1-t1-p2-m4|--pipeline 2 --micro-batches 4"
  "d1-t1-p2-m4-gpipe|--pipeline 2 --micro-batches 4 --schedule gpipe"
  "d2-t1-p1|--data 2"
  "d1-t4-p1|--tensor 4"
  "d2-t1-p2-m4|--data 2 --pipeline 2 --micro-batches 4"
  "d1-t2-p2-m4|--tensor 2 --pipeline 2 --micro-batches 4"
  "d2-t2-p1|--data 2 --tensor 2"
)
echo "layout,transport,repeat,workers,steps,accuracy,reached,training_s,step_ms"
for entry in "${layouts[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  for transport in threads mpi; do
    workers=$(( $(echo "$name" | sed -E 's/d([0-9]+)-t([0-9]+)-p([0-9]+).*/\1*\2*\3/') ))
    for i in $(seq 1 "$repeats"); do
      file="$out/$name-$transport-$i.json"
      # shellcheck disable=SC2086
      if [ "$transport" = threads ]; then
        "$bin" $flags "${common[@]}" > "$file"
      else
        mpirun --allow-run-as-root --oversubscribe -np "$workers" "$bin" $flags "${common[@]}" > "$file"
      fi
      python3 - "$file" "$name" "$transport" "$i" "$workers" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{sys.argv[5]},{r['steps']},{r['accuracy']:.4f},"
      f"{str(r['reached_target']).lower()},{r['wall_s']:.3f},{1e3 * r['step_s']:.3f}")
PY
    done
  done
done
