#!/usr/bin/env bash
# no-window-replay.sh TAUPLAN [OUT]: the fourth held-out run's measured rows predicted again
# (validate --replay: the run's own calibrated platforms, no testbed) with the prop
# queued_window_bytes taken out of every platform: the model as it was for the third matrix. Its
# round errors beside the run's give the measured window's own effect on rows it was not fitted
# to (heldout4-matrix.yaml: reported, not a bound). --convergence-seeds 1: the run's own rounds,
# no training; only round errors are compared. Writes OUT/{fashion,wide} (default
# /tmp/no-window-replay); then heldout_bounds.py OUT. From the repository root.
set -euo pipefail
tauplan=$(realpath "${1:?usage: no-window-replay.sh TAUPLAN [OUT]}")
dest=${2:-/tmp/no-window-replay}
measured=experiments/testbed/data/heldout4-first-run
for part in fashion:fashion-mlp.yaml:heldout4-matrix.yaml wide:fashion-mlp-wide.yaml:heldout4-wide-matrix.yaml; do
  IFS=: read -r name job matrix <<< "$part"
  copy="$dest/measured-$name"
  rm -rf "$copy" && mkdir -p "$copy" && cp -r "$measured/$name/." "$copy/"
  sed -i '/<prop id="queued_window_bytes"/d' "$copy"/platforms/*.xml
  "$tauplan" validate "experiments/testbed/$job" --testbed "experiments/testbed/$matrix" \
    --replay "$copy" --convergence-seeds 1 --out "$dest/$name" --no-plot > "$dest/$name.txt" 2>&1
done
