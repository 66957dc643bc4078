#!/usr/bin/env bash
# rerun_cpu_figures.sh: measures once more the CPU figures issue 25 item 1 asks to reproduce, in
# the order and with the commands of their READMEs' "Once more on a quiet VM" sections: the four
# transformer shapes (experiments/transformer), study 4's async validation (experiments/async)
# and the MLP layouts (experiments/parallelism). Every measurement is on the wall clock of this
# machine, every rank a thread; run it with nothing else running. Records `vmstat 5` beside the
# runs (its `st` column is the hypervisor's steal) and each part's start time. Reads nothing but
# the runs' own output; the readings against the stated spreads are the READMEs' business.
# Usage (from the repository root, after a build; about 8 minutes on 2 vCPUs):
#   bash experiments/rerun_cpu_figures.sh BUILD_DIR LABEL     # LABEL: e.g. 2026-12-02b
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: bash experiments/rerun_cpu_figures.sh BUILD_DIR LABEL" >&2
  exit 2
fi
build=$1
label=$2
tauplan="$build/cli/tauplan"
if [[ ! -x $tauplan ]]; then
  echo "rerun_cpu_figures.sh: $tauplan: expected a built tauplan binary" >&2
  exit 2
fi
scratch=$(mktemp -d)
layouts="experiments/parallelism/figures/rerun-$label"
mkdir -p "$layouts"
times="$layouts/times-utc.txt"
vmstat 5 > "$layouts/vmstat-5s.txt" 2>&1 &
vmstat_pid=$!
trap 'kill $vmstat_pid 2>/dev/null || true; rm -rf "$scratch"' EXIT
stamp() { echo "$1 $(date -u +%H:%M:%S)" >> "$times"; }
: > "$times"
"$tauplan" --version >> "$times"
stamp start

# The transformer shapes: heldout2 and small calibrate, wide reuses small's profiles, heldout
# calibrates.
results=experiments/transformer/results
for shape in heldout2 small wide heldout; do
  stamp "tr-$shape"
  flags=()
  [[ $shape == wide ]] && flags=(--calibration "$scratch/small")
  out="$scratch/$shape"
  [[ $shape == wide ]] && out="$scratch/small"
  "$tauplan" validate "experiments/transformer/validate-$shape.yaml" --out "$out" "${flags[@]}" \
    > "$results/validate-$shape-$label.txt" 2>&1
  cp "$out/validate-$shape.csv" "$results/validate-$shape-$label.csv"
done

# Study 4 (async): every strategy at one and two workers, two batches, slowed workers.
stamp async
async_out="experiments/async/figures/validation-$label"
"$tauplan" validate experiments/async/validate.yaml --set workers=1,2 --set batch=32,64 \
  --slow-worker 1,2 --out "$async_out" --no-plot > "$scratch/async-table.txt" 2>&1
cp "$scratch/async-table.txt" "$async_out/table.txt"
python3 experiments/async/summarise_runs.py "$label=$async_out" > "$async_out/summary.txt"

# The MLP layouts.
stamp layouts
bash experiments/parallelism/run_validation.sh "$build" > "$layouts/stdout.txt" 2>&1
for case in results/parallelism/validate/*/; do
  name=$(basename "$case")
  mkdir -p "$layouts/$name"
  cp "$case"/validation.json "$case"/validation.csv "$layouts/$name/"
done
stamp end
