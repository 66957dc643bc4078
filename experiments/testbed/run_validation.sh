#!/usr/bin/env bash
# run_validation.sh: the testbed validation of experiments/testbed/README.md. Runs
# `tauplan validate fashion-mlp.yaml --testbed matrix.yaml` (root: it brings up the emulated
# testbed of each group, calibrates it, measures every configuration as MPI ranks across it,
# then predicts and simulates), writes results/testbed-validation/ (testbed-validation.json,
# .csv, scatter.png/.svg, the calibrated platforms and every run's output) and copies the
# scatter into experiments/testbed/figures/. About 21 minutes on 2 cores; nothing else should
# run meanwhile (the hosts share this machine's cores with the fabric). Usage, from the
# repository root after a build:
#   bash experiments/testbed/run_validation.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
out=results/testbed-validation
mkdir -p results
"$build/cli/tauplan" validate experiments/testbed/fashion-mlp.yaml \
  --testbed experiments/testbed/matrix.yaml --out "$out" | tee "$out.txt"
mkdir -p experiments/testbed/figures
cp "$out/scatter.png" "$out/scatter.svg" experiments/testbed/figures/
echo "table: $out.txt; figures: experiments/testbed/figures/scatter.{png,svg}"
