#!/usr/bin/env bash
# run.sh: the head's diagnosis (experiments/transformer/README.md, "The head as the vocabulary
# grows" and "The head's GEMMs or its cross-entropy"): single-NAME.yaml of this folder (block-
# small's single row at another vocabulary or width) validated for each NAME, two rounds in turns,
# one compute profile (calibrated by the first run, reused by the others). Prints each run's head
# and loss, measured and predicted, from the CSVs (the step-parts columns).
# Usage (from the repository root, nothing else running; under a minute):
#   bash experiments/transformer/results/head-vocab-2026-12-04/run.sh BUILD/cli/tauplan [NAME...]
# NAMEs default to v256 v1024 v4096 (outputs in this folder); with NAMEs given, the outputs go to
# run-LAST/, LAST the last NAME, so that a later run keeps the first one's files.
set -euo pipefail
tauplan=${1:?usage: run.sh TAUPLAN [NAME...]}
shift
names=("$@")
here=experiments/transformer/results/head-vocab-2026-12-04
out=$here
if ((${#names[@]} == 0)); then names=(v256 v1024 v4096); else out="$here/run-${names[-1]}"; fi
mkdir -p "$out"
times="$out/times-utc.txt"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$tauplan" --version > "$times"
for round in 1 2; do
  for name in "${names[@]}"; do
    echo "round $round $name $(date -u +%H:%M:%S)" >> "$times"
    flags=(--calibration "$scratch/profile")
    [[ $round == 1 && $name == "${names[0]}" ]] && flags=()
    "$tauplan" validate "$here/single-$name.yaml" --out "$scratch/profile" "${flags[@]}" \
      > "$out/$name-$round.txt" 2>&1
    cp "$scratch/profile/single-$name.csv" "$out/$name-$round.csv"
  done
done
echo "end $(date -u +%H:%M:%S)" >> "$times"
python3 - "$out" "${names[@]}" <<'PY' | tee "$out/summary.txt"
import csv, sys
out, names = sys.argv[1], sys.argv[2:]
print("workload   round  head ms measured  predicted  measured - predicted  measured / predicted")
for name in names:
    for r in (1, 2):
        row = next(csv.DictReader(open(f"{out}/{name}-{r}.csv")))
        m, p = float(row["head_measured_s"]) * 1e3, float(row["head_predicted_s"]) * 1e3
        print(f"{name:>10} {r:>5}  {m:>16.3f}  {p:>9.3f}  {m - p:>20.3f}  {m / p:>20.3f}")
PY
