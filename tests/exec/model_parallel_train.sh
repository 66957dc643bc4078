#!/usr/bin/env bash
# model_parallel_train.sh: tensor- and pipeline-parallel training of fashion-mlp reaches 85% test
# accuracy with 2 and 4 workers (threads), and a mesh the MLP cannot take is one line, exit 2.
# Usage: model_parallel_train.sh TAUPLAN_MODEL_PARALLEL. Exit 77 (skip) without Fashion-MNIST.
set -uo pipefail
bin=$1
msg=$("$bin" --pipeline 4 --synthetic 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$msg" | wc -l)" -ne 1 ] ||
   ! printf '%s' "$msg" | grep -q "pipeline_parallel: expected at most the 3 layers"; then
  echo "bad mesh: exit $rc, message: $msg"
  exit 1
fi
data=${TAUPLAN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if ! ls "$data"/train-images-idx3-ubyte* > /dev/null 2>&1; then
  echo "Fashion-MNIST not found in $data: skipped"
  exit 77
fi
status=0
for flags in "--tensor 2" "--pipeline 2 --micro-batches 4" "--tensor 4" \
             "--data 2 --pipeline 2 --micro-batches 4"; do
  # shellcheck disable=SC2086
  line=$("$bin" $flags --target 0.85 --max-steps 3000 --eval-every 100 | head -1)
  echo "$line"
  case "$line" in
    *"(reached target 0.85)"*) ;;
    *) status=1 ;;
  esac
done
exit $status
