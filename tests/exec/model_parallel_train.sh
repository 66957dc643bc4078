#!/usr/bin/env bash
# model_parallel_train.sh: tensor- and pipeline-parallel training of fashion-mlp by `tauplan
# measure` (strategy mesh, threads) reaches 85% test accuracy with 2 and 4 workers, and a mesh
# the MLP cannot take is one line naming the flag that gave it, exit 2.
# Usage: model_parallel_train.sh TAUPLAN JOB. Exit 77 (skip) without Fashion-MNIST.
set -uo pipefail
bin=$1
job=$2
common=(measure "$job" --strategies mesh --timing concurrent --target-accuracy 0.85
        --max-steps 3000 --eval-every 100 --eval-samples 0)
msg=$("$bin" "${common[@]}" --workers 4 --pipeline-parallel 4 --micro-batches 4 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$msg" | wc -l)" -ne 1 ] ||
   ! printf '%s' "$msg" | grep -q "command line: --pipeline_parallel: expected at most the 3 layers"; then
  echo "bad mesh: exit $rc, message: $msg"
  exit 1
fi
data=${TAUPLAN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if ! ls "$data"/train-images-idx3-ubyte* > /dev/null 2>&1; then
  echo "Fashion-MNIST not found in $data: skipped"
  exit 77
fi
status=0
for flags in "--workers 2 --tensor-parallel 2 --micro-batches 1" \
             "--workers 2 --pipeline-parallel 2 --micro-batches 4" \
             "--workers 4 --tensor-parallel 4 --micro-batches 1" \
             "--workers 4 --data-parallel 2 --pipeline-parallel 2 --micro-batches 4"; do
  # shellcheck disable=SC2086
  row=$("$bin" "${common[@]}" $flags --json 2>/dev/null | python3 -c '
import json, sys
(r,) = json.load(sys.stdin)["results"]
print(r["layout"], r["communicator"], r["steps"], r["final_accuracy"], r["reached_target"])')
  echo "$flags: $row"
  case "$row" in
    *" threads "*" True") ;;
    *) status=1 ;;
  esac
done
exit $status
