#!/usr/bin/env bash
# run.sh: what waits behind a message leaving a testbed host (experiments/testbed/README.md,
# "The queue behind a message"; a measurement for a model not yet built, written before its run).
#
# On platforms/testbed-tier3-2to1.xml, tests/exec/testbed/queue_probe.cpp: a-h0 sends one
# message to Y while sending an 8-byte message every 0.5 ms to a-h2 (same leaf: the pings leave
# over a-h0's NIC, as a rendezvous answer leaves over the NIC its sender's own chunk is
# leaving on); a-h2 stamps their arrival. Y = a-h1 (1 ms one way), b-h0 (2 ms), d-h0 (4 ms);
# messages of 58,788 B (eager: the ring of 16's chunk), 235,148 B (the ring of 4's), 1,333,768 B
# (the wide MLP's ring of 4) and 2,667,536 B (its pushes); 15 rounds each. Usage (root, nothing
# else running):
#   bash experiments/testbed/data/queue-behind-2026-12-04/run.sh BUILD/cli/tauplan [OUT]
set -euo pipefail
source "$(dirname "$0")/../diagnosis-setup.sh" tpq- platforms/testbed-tier3-2to1.xml testbed_queue_probe "$@"
for y in a-h1 b-h0 d-h0; do
  for bytes in 58788 235148 1333768 2667536; do
    echo "$(date -u +%H:%M:%S) $y $bytes"
    "$tauplan" testbed run --prefix "$prefix" --hosts "a-h0,$y,a-h2" -- "$bin" "$bytes" 15 \
      > "$out/queue-$y-$bytes.txt" 2> "$out/queue-$y-$bytes.err"
  done
done
kill "$vmstat_pid"
echo "$(date -u +%H:%M:%S) done"
