#!/usr/bin/env bash
# run.sh: is the rings' heavy-tailed excess a step the machine's CPUs or the emulated network?
# (experiments/testbed/README.md, "The host's share of the ring gap"; protocol and expectations
# written and committed before the first run.)
#
# On testbed-fattree3-2to1.xml, a ring of 4 inside leaf a (a-h0..a-h3, hops of 1 ms one way; the
# bare ring of tests/exec/testbed/ring_steps.cpp, 40 rounds, every step timed) is run alone and
# then while a second, independent ring of 10 (b-h0..b-h5, c-h0..c-h3; 58.8 KB chunks, 150
# rounds) runs on leaves b and c. The two rings share no link (leaf a's NICs and uplink carry
# only the ring of 4) but share the machine's 2 vCPUs, its kernel and the testbed's forwarding
# process. Two chunk sizes: 58.8 KB (eager, the ring of 16's chunk in the diagnosis) and 313.5
# KB (rendezvous). Order A B A B per size, so drift shows. The fabric's counters are read after
# every run (fabric-after-NAME.txt: its packets' lateness, cumulative), so each run's share is
# the difference from the one before. steps.py / compounding.py (in
# ../ring-gap-diagnosis) read the traces. Usage (root, nothing else running):
#   bash experiments/testbed/data/host-contention-2026-12-04/run.sh BUILD/cli/tauplan [OUT]
set -euo pipefail
source "$(dirname "$0")/../diagnosis-setup.sh" tph- platforms/testbed-fattree3-2to1.xml testbed_ring_steps "$@"
"$tauplan" testbed status --prefix "$prefix" > "$out/fabric-at-start.txt" 2>&1 || true
ring4=a-h0,a-h1,a-h2,a-h3
ring10=b-h0,b-h1,b-h2,b-h3,b-h4,b-h5,c-h0,c-h1,c-h2,c-h3
alone() {  # name chunk_floats
  echo "$(date -u +%H:%M:%S) $1 (alone)"
  "$tauplan" testbed run --prefix "$prefix" --hosts "$ring4" -- "$bin" "$2" 40 \
    > "$out/steps-$1.txt" 2> "$out/steps-$1.err"
  "$tauplan" testbed status --prefix "$prefix" > "$out/fabric-after-$1.txt" 2>&1 || true
  gzip -9f "$out/steps-$1.txt"
}
loaded() {  # name chunk_floats
  echo "$(date -u +%H:%M:%S) $1 (beside the ring of 10)"
  "$tauplan" testbed run --prefix "$prefix" --hosts "$ring10" -- "$bin" 14697 150 \
    > "$out/background-$1.txt" 2> "$out/background-$1.err" &
  local bg=$!
  sleep 5  # the ring of 10 under way (its MPI start-up takes 1-3 s)
  "$tauplan" testbed run --prefix "$prefix" --hosts "$ring4" -- "$bin" "$2" 40 \
    > "$out/steps-$1.txt" 2> "$out/steps-$1.err"
  local fg_done
  fg_done=$(date -u +%H:%M:%S.%N)
  wait "$bg"
  echo "  foreground done $fg_done, background done $(date -u +%H:%M:%S.%N)"
  "$tauplan" testbed status --prefix "$prefix" > "$out/fabric-after-$1.txt" 2>&1 || true
  gzip -9f "$out/steps-$1.txt" "$out/background-$1.txt"
}
for rep in 1 2; do
  alone "ring4-eager-alone-$rep" 14697
  loaded "ring4-eager-loaded-$rep" 14697
done
for rep in 1 2; do
  alone "ring4-rdv-alone-$rep" 78383
  loaded "ring4-rdv-loaded-$rep" 78383
done
kill "$vmstat_pid"
echo "$(date -u +%H:%M:%S) done"
