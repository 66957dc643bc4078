#!/usr/bin/env bash
# run.sh: the head's diagnosis (experiments/transformer/README.md, "The head as the vocabulary
# grows"): block-small's single row validated at vocabularies 256, 1024 and 4096, two rounds in
# turns, one compute profile (calibrated by the first run, reused by the others). Prints each run's
# head and loss, measured and predicted, from the CSVs (the step-parts columns).
# Usage (from the repository root, nothing else running; about 3 minutes):
#   bash experiments/transformer/results/head-vocab-2026-12-04/run.sh BUILD/cli/tauplan
set -euo pipefail
tauplan=${1:?usage: run.sh TAUPLAN}
here=experiments/transformer/results/head-vocab-2026-12-04
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$tauplan" --version > "$here/times-utc.txt"
for round in 1 2; do
  for vocabulary in 256 1024 4096; do
    echo "round $round v$vocabulary $(date -u +%H:%M:%S)" >> "$here/times-utc.txt"
    flags=(--calibration "$scratch/profile")
    [[ $round == 1 && $vocabulary == 256 ]] && flags=()
    "$tauplan" validate "$here/single-v$vocabulary.yaml" --out "$scratch/profile" "${flags[@]}" \
      > "$here/v$vocabulary-$round.txt" 2>&1
    cp "$scratch/profile/single-v$vocabulary.csv" "$here/v$vocabulary-$round.csv"
  done
done
echo "end $(date -u +%H:%M:%S)" >> "$here/times-utc.txt"
python3 - "$here" <<'PY' | tee "$here/summary.txt"
import csv, sys
here = sys.argv[1]
print("vocabulary round  head ms measured  predicted  measured - predicted  measured / predicted")
for vocabulary in (256, 1024, 4096):
    for r in (1, 2):
        row = next(csv.DictReader(open(f"{here}/v{vocabulary}-{r}.csv")))
        m, p = float(row["head_measured_s"]) * 1e3, float(row["head_predicted_s"]) * 1e3
        print(f"{vocabulary:>10} {r:>5}  {m:>16.3f}  {p:>9.3f}  {m - p:>20.3f}  {m / p:>20.3f}")
PY
