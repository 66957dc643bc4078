#!/usr/bin/env bash
# ab_runs.sh: the four transformer shapes validated by two tauplan binaries, taking turns on this
# machine, so that a difference between two commits is read against the same VM at the same time
# (the shapes' absolute figures move from VM to VM; "A fresh VM, the same code" in README.md).
# Each round runs both binaries, in the order A B in odd rounds and B A in even ones, and each
# binary runs the shapes as experiments/rerun_cpu_figures.sh does: heldout2 and small calibrate,
# wide reuses small's profiles, heldout calibrates. Every measurement is on the wall clock of
# this machine, every rank a thread; run it with nothing else running. Records `vmstat 5` beside
# the runs and each run's start time; reads nothing but the runs' own output (summary:
# ab_summary.py in this folder).
# Usage (from the repository root; about 2 minutes a round on 2 vCPUs):
#   bash experiments/transformer/ab_runs.sh TAUPLAN_A TAUPLAN_B ROUNDS OUT_DIR
set -euo pipefail
usage="usage: bash experiments/transformer/ab_runs.sh TAUPLAN_A TAUPLAN_B ROUNDS OUT_DIR"
(($# == 4)) || { echo "$usage" >&2; exit 2; }
binary_a=$1 binary_b=$2 rounds=$3 out=$4
for binary in "$binary_a" "$binary_b"; do
  if [[ ! -x $binary ]]; then
    echo "ab_runs.sh: $binary: expected a built tauplan binary" >&2
    exit 2
  fi
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "ab_runs.sh: ROUNDS: expected a positive integer, got '$rounds'" >&2
  exit 2
fi
mkdir -p "$out"
scratch=$(mktemp -d)
vmstat 5 > "$out/vmstat-5s.txt" 2>&1 &
vmstat_pid=$!
trap 'kill $vmstat_pid 2>/dev/null || true; rm -rf "$scratch"' EXIT
times="$out/times-utc.txt"
{
  echo "A $("$binary_a" --version)"
  echo "B $("$binary_b" --version)"
} > "$times"

run_shapes() { # LABEL BINARY ROUND
  local label=$1 binary=$2 round=$3 shape
  local dir="$out/$label-$round"
  mkdir -p "$dir"
  for shape in heldout2 small wide heldout; do
    echo "$label round $round $shape $(date -u +%H:%M:%S)" >> "$times"
    local flags=() calibration="$scratch/$label-$round-$shape"
    if [[ $shape == wide ]]; then
      calibration="$scratch/$label-$round-small"
      flags=(--calibration "$calibration")
    fi
    "$binary" validate "experiments/transformer/validate-$shape.yaml" --out "$calibration" \
      "${flags[@]}" > "$dir/validate-$shape.txt" 2>&1
    cp "$calibration/validate-$shape.csv" "$dir/validate-$shape.csv"
  done
}

for ((round = 1; round <= rounds; round++)); do
  if ((round % 2 == 1)); then
    run_shapes A "$binary_a" "$round"
    run_shapes B "$binary_b" "$round"
  else
    run_shapes B "$binary_b" "$round"
    run_shapes A "$binary_a" "$round"
  fi
done
echo "end $(date -u +%H:%M:%S)" >> "$times"
