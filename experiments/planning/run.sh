#!/bin/bash
# run.sh: the two what-if studies of README.md, end to end.
#   experiments/planning/run.sh [TAUPLAN] [OUT]
# TAUPLAN defaults to build/cli/tauplan, OUT to /tmp/tauplan-planning. Every `plan` writes its
# folder (frontier.csv, evaluated.csv, plan.json, frontier.png/svg, candidates/) under OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tauplan=${1:-$root/build/cli/tauplan}
out=${2:-/tmp/tauplan-planning}
inv=$here/inventories
mkdir -p "$out"
cd "$out" || exit 1

echo "== study 1: adding 4 V100 nodes to a cluster of older GPUs"
"$tauplan" plan "$inv/older-gpus.yaml" --out older-gpus.plan
"$tauplan" plan "$inv/older-gpus-plus-v100.yaml" --out older-gpus-plus-v100.plan
"$tauplan" plan "$inv/older-gpus.yaml" --objective min-cost-under-deadline --deadline 6h \
  --out older-gpus-6h.plan --recheck 0 --no-plot
echo "(exit $? expected 3: no configuration of the older GPUs meets 6 h)"
"$tauplan" plan "$inv/older-gpus-plus-v100.yaml" --objective min-cost-under-deadline \
  --deadline 6h --out older-gpus-plus-v100-6h.plan --recheck 3 --no-plot
"$tauplan" sweep "$here/jobs/hetseq-split.yaml" --set workers=8,16,24,32 --set split=even,speed \
  --engine simgrid --out hetseq-split.sweep
gnuplot -e "a='older-gpus.plan/frontier.csv'; la='older GPUs (40)'; \
  b='older-gpus-plus-v100.plan/frontier.csv'; lb='+ 4 nodes of 4 x V100'; out='study1'; \
  ttl='Study 1: ResNet-50 on older GPUs, with and without 4 V100 nodes'" "$here/plot_frontiers.gp"

echo "== study 2: on-demand against revocable servers for a 12 h deadline"
"$tauplan" plan "$inv/cloud-on-demand.yaml" --out cloud-on-demand.plan
"$tauplan" plan "$inv/cloud-revocable.yaml" --out cloud-revocable.plan
"$tauplan" plan "$inv/cloud-revocable.yaml" --deadline-confidence 0.99 \
  --out cloud-revocable-99.plan --recheck 3 --no-plot
"$tauplan" plan "$inv/cloud-on-demand.yaml" --deadline 9h --out cloud-on-demand-9h.plan \
  --recheck 3 --no-plot
"$tauplan" plan "$inv/cloud-revocable.yaml" --deadline 9h --out cloud-revocable-9h.plan \
  --recheck 0 --no-plot
echo "(exit $? expected 3: no revocable configuration meets 9 h)"
"$tauplan" sweep "$here/jobs/revocation-check.yaml" --set seed=1 --json --out revocation-analytic.sweep \
  > revocation-analytic.json
"$tauplan" sweep "$here/jobs/revocation-check.yaml" --engine simgrid \
  --set seed=$(seq -s, 1 40) --json --out revocation-simgrid.sweep > revocation-simgrid.json
gnuplot -e "a='cloud-on-demand.plan/frontier.csv'; la='on-demand VMs'; \
  b='cloud-revocable.plan/frontier.csv'; lb='revocable VMs (expected time and cost)'; \
  out='study2'; deadline=12; ttl='Study 2: ResNet-50 on cloud VMs, on-demand or revocable'" \
  "$here/plot_frontiers.gp"
echo "plots: $out/study1.png $out/study2.png"
