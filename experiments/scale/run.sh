#!/bin/bash
# run.sh: the contention study of README.md, end to end.
#   experiments/scale/run.sh [TAUPLAN] [OUT] [SCALES]
# TAUPLAN defaults to build/cli/tauplan, OUT to results/scale, SCALES to "1024 4096 16384".
# For each scale, wiring (rail, plain) and leaf oversubscription (1, 2, 4) it generates the
# cluster with `tauplan platform` (DGX H100 preset, 32 leaf ports down), then runs every job of
# jobs/ at that scale, with ranks numbered tp-dp-pp (Megatron's default) and tp-pp-dp, through
# `tauplan predict` (the closed form) and `tauplan simulate` (SimGrid CM02) on it, and writes OUT/results.csv (one row per job and fabric), OUT/<case>.{predict,
# simulate}.json and the figure OUT/scale.png / scale.svg (plot.gp). Both rank orders at 1,024
# GPUs, tp-dp-pp above; 16,384 GPUs: rail at 1:1 and 4:1 only, about 5 minutes a simulation.
# About 45 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tauplan=${1:-$root/build/cli/tauplan}
out=${2:-$root/results/scale}
scales=${3:-1024 4096 16384}
mkdir -p "$out/platforms"
csv=$out/results.csv
echo "gpus,wiring,oversubscription,rank_order,job,predict_round_s,simulate_round_s,error,sim_wall_s,flows_started,flows_represented" > "$csv"

for gpus in $scales; do
  nodes=$((gpus / 8))
  wirings="rail plain"
  [ "$gpus" -ge 16384 ] && wirings="rail"
  for wiring in $wirings; do
    overs="1 2 4"
    [ "$gpus" -ge 16384 ] && overs="1 4"
    for over in $overs; do
      platform=$out/platforms/h100-$gpus-$wiring-$over.xml
      "$tauplan" platform --preset dgx-h100 --nodes "$nodes" --wiring "$wiring" \
        --oversubscription "$over" --out "$platform" > /dev/null
      orders="tp-dp-pp tp-pp-dp"
      [ "$gpus" -gt 1024 ] && orders="tp-dp-pp"
      for order in $orders; do
        for job in "$here"/jobs/*-"$gpus"*.yaml; do
          case_name=$(basename "$job" .yaml)-$wiring-$over-$order
          flags=(--platform "$platform" --rank-order "$order" --json)
          "$tauplan" predict "$job" "${flags[@]}" > "$out/$case_name.predict.json" 2> /dev/null
          start=$(date +%s.%N)
          "$tauplan" simulate "$job" "${flags[@]}" > "$out/$case_name.simulate.json" 2> /dev/null
          wall=$(echo "$(date +%s.%N) - $start" | bc)
          predicted=$(jq '.results[0].round_s' "$out/$case_name.predict.json")
          simulated=$(jq '.results[0].round_s' "$out/$case_name.simulate.json")
          flows=$(jq -r '.results[0] | "\(.flows_started),\(.flows_represented)"' "$out/$case_name.simulate.json")
          error=$(echo "($predicted - $simulated) / $simulated" | bc -l)
          printf '%s,%s,%s,%s,%s,%s,%s,%.5f,%.1f,%s\n' "$gpus" "$wiring" "$over" "$order" \
            "$(basename "$job" .yaml)" "$predicted" "$simulated" "$error" "$wall" "$flows" >> "$csv"
          tail -1 "$csv"
        done
      done
    done
  done
done
gnuplot -e "csv='$csv'; out='$out/scale'" "$here/plot.gp" && echo "figure: $out/scale.png, $out/scale.svg"
