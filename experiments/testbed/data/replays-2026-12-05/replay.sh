#!/usr/bin/env bash
# replay.sh TAUPLAN: issue 27 items 3 and 4 re-read on main after the latency jitter (905b50c,
# 7aa866b): three recorded runs predicted again with `validate --replay` (nothing measured; each
# row's testbed runs, compute calibrations and calibrated platforms are the run's own), into
# /tmp/replays-2026-12-05/NAME, their summaries kept here (NAME.txt, NAME/*.json, NAME/*.csv).
# The probed runs of 2026-11-27 predate the `-before`/`-after` platforms replay reads; a copy of
# each row's calibrated platform stands in for them (only the analytic before/after line reads
# them). Runs in seconds; from the repository root.
set -euo pipefail
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: replay.sh TAUPLAN (an executable)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd) data=experiments/testbed/data work=/tmp/replays-2026-12-05
rm -rf "$work" && mkdir -p "$work"
replay() {  # NAME MATRIX RECORDED [validate flags...]
  local name=$1 matrix=$2 recorded=$3
  shift 3
  "$TAUPLAN" validate experiments/testbed/fashion-mlp.yaml --testbed "experiments/testbed/$matrix" \
    --replay "$recorded" --out "$work/$name" --no-plot "$@" 2>&1 | grep -v '\[=' > "$here/$name.txt"
  mkdir -p "$here/$name" && cp "$work/$name"/testbed-validation.{json,csv} "$here/$name/"
}
TAUPLAN=$1
replay ps-capacity-2026-12-04 ps-capacity-matrix.yaml "$data/ps-capacity-2026-12-04" \
  --eval-every 1000 --max-steps 60 --target-accuracy 0.99 --convergence-seeds 1
for run in matrix-probed-run:matrix.yaml heldout-probed-run:heldout-matrix.yaml; do
  name=${run%%:*}
  cp -r "$data/$name" "$work/recorded-$name"
  for platform in "$work/recorded-$name"/platforms/[0-9][0-9].xml; do
    cp "$platform" "${platform%.xml}-before.xml" && cp "$platform" "${platform%.xml}-after.xml"
  done
  replay "$name" "${run##*:}" "$work/recorded-$name" --target-accuracy 0.8 --convergence-seeds 2
done
