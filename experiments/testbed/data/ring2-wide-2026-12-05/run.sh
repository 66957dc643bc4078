#!/usr/bin/env bash
# run.sh: why the fifth held-out matrix's ring of 2 (row 10: the wide MLP, 2.67 MB sent each way
# at once across r-t) took 2.68 s a round where CM02 and the analytic engine said 1.80 s
# (experiments/testbed/README.md, "The ring of 2, both ways at once"; a diagnosis, written before
# its run, no engine changed).
#
# On platforms/testbed-triangle3.xml at time scale 4 (as the matrix ran), the bare ring of
# tests/exec/testbed/ring_steps.cpp (every step's entry and exit timed), 20 rounds each, while
# `ss -tin` samples every TCP connection of both hosts' kernels every 0.2 s and the fabric's
# per-link counters (packets, drops) are copied before and after each run:
#   rt-2.67   r-h0, t-h0, chunks of 666,885 floats (2.67 MB: row 10's messages)
#   rt-1.33   the same hosts, chunks of 333,442 floats (1.33 MB)
#   rr-2.67   r-h0, r-h1 (a route inside group r: two NICs, 1 ms one way at scale 4), 2.67 MB
# With RING_STEPS_PIECE=N in the environment (added after the first run), a ring of 2 sends
# its chunks as pieces of N floats, all posted at once (ring_steps.cpp).
# Usage (root, nothing else running):
#   bash experiments/testbed/data/ring2-wide-2026-12-05/run.sh BUILD/cli/tauplan [OUT]
set -euo pipefail
tauplan=$(realpath "${1:?usage: run.sh TAUPLAN [OUT]}")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here}
cd "$here/../../../.."
prefix=tpw-
bin=$(dirname "$tauplan")/../tests/exec/testbed/testbed_ring_steps
[ -x "$bin" ] || { echo "run.sh: no $bin (build the target testbed_ring_steps)" >&2; exit 2; }
mkdir -p "$out"
"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true
trap '"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true' EXIT
"$tauplan" testbed up platforms/testbed-triangle3.xml --scale 4 --prefix "$prefix" > "$out/testbed-up.txt"
git rev-parse HEAD > "$out/commit.txt"
vmstat 5 > "$out/vmstat.txt" &
vmstat_pid=$!
stats=${TAUPLAN_TESTBED_STATE_DIR:-/run/tauplan}/${prefix}fabric-stats.json
netns_of() { awk -v h="$1" '$2 == h {print $4}' "$out/testbed-up.txt"; }
sample_ss() {  # host file: `ss -tin` every 0.2 s, each sample headed by CLOCK_MONOTONIC
  local ns
  ns=$(netns_of "$1")
  while true; do
    echo "at $(cut -d' ' -f1 /proc/uptime)"
    ip netns exec "$ns" ss -tin state established
    sleep 0.2
  done > "$2"
}
run() {  # name hosts chunk_floats
  echo "$(date -u +%H:%M:%S) $1"
  sleep 1.5  # the fabric writes its counters once a second
  cp "$stats" "$out/fabric-before-$1.json"
  local pids=() host
  for host in ${2//,/ }; do
    sample_ss "$host" "$out/ss-$1-$host.txt" &
    pids+=($!)
  done
  "$tauplan" testbed run --prefix "$prefix" --hosts "$2" -- "$bin" "$3" 20 ${RING_STEPS_PIECE:-} > "$out/steps-$1.txt" \
    2> "$out/steps-$1.err"
  kill "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null || true
  sleep 1.5
  cp "$stats" "$out/fabric-after-$1.json"
  gzip -9f "$out"/ss-"$1"-*.txt
}
run rt-2.67 r-h0,t-h0 666885
run rt-1.33 r-h0,t-h0 333442
run rr-2.67 r-h0,r-h1 666885
kill "$vmstat_pid"
echo "$(date -u +%H:%M:%S) done"
