#!/usr/bin/env bash
# replay.sh TAUPLAN [OUT]: the third held-out run's 15 measured rows predicted again (validate
# --replay: its own calibrated platforms, no testbed) with the simulator's queued_window_bytes
# (b171eda, made after the run and after the diagnosis "A ring step, packet by packet") set to W
# = 0 (the model as held out), 76000, 139000 and 220000 bytes (the range the queue-behind
# measurement gave). Training-set figures: the change was made looking at these rings.
# The run kept one platform per row (NN.xml, the mean of the calibrations before and after it);
# --replay wants NN-before.xml and NN-after.xml, so both are copies of it (W = 0 gives back the
# run's CM02 round errors to the digit). Rounds to target come from --replay's own convergence
# seeds, not the run's: not comparable, not reported. Writes OUT/W-*/{fashion,wide}; then
#   python3 experiments/testbed/heldout_bounds.py OUT/W-76000   (and so on: W-*/bounds.txt here;
# the JSON kept here is gzipped: gunzip -k it to read it so).
# Run from the repository root.
set -euo pipefail
tauplan=$(realpath "${1:?usage: replay.sh TAUPLAN [OUT]}")
out=${2:-/tmp/queued-window-replay}
run=experiments/testbed/data/heldout3-first-run
for w in 0 76000 139000 220000; do
  for pair in fashion:fashion-mlp.yaml:heldout3-matrix.yaml wide:fashion-mlp-wide.yaml:heldout3-wide-matrix.yaml; do
    IFS=: read -r name job matrix <<< "$pair"
    mkdir -p "$out/W-$w"
    src="$out/src-$w/$name"
    rm -rf "$src" && mkdir -p "$src" && cp -r "$run/$name/." "$src/"
    for f in "$src"/platforms/[0-9][0-9].xml; do
      [ "$w" = 0 ] || sed -i "s#<prop id=\"eager_limit_bytes\" value=\"65536\"/>#&\n    <prop id=\"queued_window_bytes\" value=\"$w\"/>#" "$f"
      cp "$f" "${f%.xml}-before.xml"
      cp "$f" "${f%.xml}-after.xml"
    done
    "$tauplan" validate "experiments/testbed/$job" --testbed "experiments/testbed/$matrix" \
      --replay "$src" --out "$out/W-$w/$name" --no-plot > "$out/W-$w/$name.txt" 2>&1
  done
done
