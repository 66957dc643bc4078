#!/usr/bin/env bash
# run-sniffed.sh: run.sh again with ../ring-packets-2026-12-04/sniff.py on the sender (a-h0),
# whose sends give its NIC's queue directly (a first-in-first-out reconstruction at 12.5 MB/s:
# summarise.py), because run.sh's pings were sent only when the sender's MPI loop was not stalled
# (written after run.sh's results, before this run). Usage as run.sh; writes sniffed-*.
set -euo pipefail
tauplan=$(realpath "${1:?usage: run-sniffed.sh TAUPLAN [OUT]}")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here}
repo=$(cd "$here/../../../.." && pwd)
cd "$repo"
prefix=tpq-
bin=$(dirname "$tauplan")/../tests/exec/testbed/testbed_queue_probe
[ -x "$bin" ] || { echo "run-sniffed.sh: no $bin" >&2; exit 2; }
"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true
trap '"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true' EXIT
"$tauplan" testbed up platforms/testbed-tier3-2to1.xml --prefix "$prefix" > "$out/sniffed-testbed-up.txt"
ns=$(awk '$2 == "a-h0" {print $4}' "$out/sniffed-testbed-up.txt")
for y in a-h1 d-h0; do
  for bytes in 58788 235148 1333768 2667536; do
    echo "$(date -u +%H:%M:%S) $y $bytes"
    ip netns exec "$ns" /usr/bin/python3 "$here/../ring-packets-2026-12-04/sniff.py" "${prefix}emu" \
      "$out/sniffed-packets-$y-$bytes.txt" &
    sn=$!
    sleep 1
    "$tauplan" testbed run --prefix "$prefix" --hosts "a-h0,$y,a-h2" -- "$bin" "$bytes" 15 \
      > "$out/sniffed-queue-$y-$bytes.txt" 2> "$out/sniffed-queue-$y-$bytes.err"
    sleep 0.5
    kill -TERM "$sn"
    wait "$sn" || true
    gzip -9f "$out/sniffed-packets-$y-$bytes.txt"
  done
done
echo "$(date -u +%H:%M:%S) done"
