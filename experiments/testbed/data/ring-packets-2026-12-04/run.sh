#!/usr/bin/env bash
# run.sh: where a quiet ring step's time goes, packet by packet (experiments/testbed/README.md,
# "A ring step, packet by packet"; a diagnosis, written before its run, no engine changed).
#
# On platforms/testbed-tier3-2to1.xml (the third held-out matrix's t2), the bare ring of
# tests/exec/testbed/ring_steps.cpp (every step's entry and exit on CLOCK_MONOTONIC, each round's
# agreed start printed) with 4 ranks, while sniff.py records every TCP packet each of the 4
# hosts' kernels sends and receives (kernel timestamps on the same clock):
#   far-rdv    one host per leaf, a-h3 b-h3 c-h3 d-h3 (row 05 of the third held-out matrix: hops
#              of 2, 3, 3 and 4 ms one way), chunks of 58,787 floats (235 KB, rendezvous), 30
#              rounds; and once more without the sniffers (far-rdv-bare), to see what they cost
#   far-eager  the same hosts, chunks of 14,697 floats (58.8 KB, eager), 30 rounds
#   near-rdv   a-h0..a-h3 (hops of 1 ms), 235 KB chunks, 30 rounds
# Usage (root, nothing else running):
#   bash experiments/testbed/data/ring-packets-2026-12-04/run.sh BUILD/cli/tauplan [OUT]
set -euo pipefail
source "$(dirname "$0")/../diagnosis-setup.sh" tpp- platforms/testbed-tier3-2to1.xml testbed_ring_steps "$@"
netns_of() { awk -v h="$1" '$2 == h {print $4}' "$out/testbed-up.txt"; }
run() {  # name hosts chunk_floats sniff(0/1)
  echo "$(date -u +%H:%M:%S) $1"
  local pids=() ns host
  if [ "$4" = 1 ]; then
    for host in ${2//,/ }; do
      ns=$(netns_of "$host")
      ip netns exec "$ns" /usr/bin/python3 "$here/sniff.py" "${prefix}emu" "$out/packets-$1-$host.txt" &
      pids+=($!)
    done
    sleep 1
  fi
  "$tauplan" testbed run --prefix "$prefix" --hosts "$2" -- "$bin" "$3" 30 > "$out/steps-$1.txt" \
    2> "$out/steps-$1.err"
  if [ "$4" = 1 ]; then
    sleep 0.5
    kill -TERM "${pids[@]}"
    wait "${pids[@]}" || true
    gzip -9f "$out"/packets-"$1"-*.txt
  fi
  gzip -9f "$out/steps-$1.txt"
}
far=a-h3,b-h3,c-h3,d-h3
run far-rdv "$far" 58787 1
run far-rdv-bare "$far" 58787 0
run far-eager "$far" 14697 1
run near-rdv a-h0,a-h1,a-h2,a-h3 58787 1
kill "$vmstat_pid"
echo "$(date -u +%H:%M:%S) done"
