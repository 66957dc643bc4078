#!/usr/bin/env bash
# run_validation.sh: `tauplan validate` on layouts of fashion-mlp (strategy mesh): 2 and 4 ranks,
# tensor, pipeline (GPipe and 1F1B) and data parallel, each measured on the wall clock with every
# rank a thread, beside the analytic engine and SimGrid on the platform calibrated just before and
# after it. Writes results/parallelism/validate/<case>/ (validation.json, .csv, scatter) and
# prints each case's table. Usage (from the repository root, after a build; about 2 minutes):
#   bash experiments/parallelism/run_validation.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
tauplan="$build/cli/tauplan"
job=experiments/parallelism/fashion-mlp-layouts.yaml
out=results/parallelism/validate
mkdir -p "$out"
# case|flags
cases=(
  "K2-tensor|--workers 2 --set tensor_parallel=1,2"
  "K2-pipeline|--workers 2 --pipeline_parallel 2 --set pipeline_schedule=gpipe,1f1b"
  "K4-tensor|--workers 4 --set tensor_parallel=1,2,4"
  "K4-tensor-pipeline|--workers 4 --tensor_parallel 2 --pipeline_parallel 2"
)
for entry in "${cases[@]}"; do
  name=${entry%%|*}
  # shellcheck disable=SC2086
  set -- ${entry#*|}
  echo "== $name: tauplan validate $job $* --out $out/$name"
  "$tauplan" validate "$job" "$@" --out "$out/$name" --no-plot
done
