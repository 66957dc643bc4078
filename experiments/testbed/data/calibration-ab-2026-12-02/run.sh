#!/usr/bin/env bash
# run.sh OLD NEW: the measurement of experiments/testbed/README.md, "Calibrations that repeat: the
# messages' own rates" (protocol written before it ran). OLD and NEW are tauplan binaries (the
# old rule, 73f6f59; the new rule). Root; run from the repository root; writes beside itself.
set -uo pipefail
old=$1
new=$2
out=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$out/vmstat-5s.txt" &
vm=$!
trap 'kill $vm 2>/dev/null' EXIT
stamp() { date -u +%H:%M:%S; }
"$new" testbed down --prefix tpr- > /dev/null 2>&1
"$new" testbed up platforms/testbed-ps8.xml --prefix tpr- > "$out/up.txt" 2>&1 || exit 1
for i in 1 2 3 4 5 6 7 8; do
  if [ $((i % 2)) -eq 1 ]; then arm=old; bin=$old; else arm=new; bin=$new; fi
  echo "$(stamp) calibration $i ($arm) starts" | tee -a "$out/timeline.txt"
  "$bin" testbed calibrate --prefix tpr- --mpi --json --out "$out/cal-$i-$arm.xml" \
    > "$out/cal-$i-$arm.json" 2> "$out/cal-$i-$arm.err"
  rc=$?  # (as run on 2026-12-02, $? was read after $(stamp) and logged 0 every time)
  echo "$(stamp) calibration $i ($arm) exit $rc" | tee -a "$out/timeline.txt"
done
"$new" testbed down --prefix tpr- >> "$out/up.txt" 2>&1
for i in 1 2 3 4 5 6; do
  if [ $((i % 2)) -eq 1 ]; then arm=old; bin=$old; else arm=new; bin=$new; fi
  echo "$(stamp) ci matrix $i ($arm) starts" | tee -a "$out/timeline.txt"
  "$bin" validate experiments/testbed/fashion-mlp.yaml --testbed experiments/testbed/ci-matrix.yaml \
    --target-accuracy 0.8 --convergence-seeds 2 --max-round-error 15 --no-plot \
    --testbed-prefix tpv- --out "$out/ci-$i-$arm" > "$out/ci-$i-$arm.txt" 2>&1
  rc=$?
  echo "$(stamp) ci matrix $i ($arm) exit $rc" | tee -a "$out/timeline.txt"
  rm -f "$out/ci-$i-$arm"/runs/*.err "$out/ci-$i-$arm"/runs/*.out
done
