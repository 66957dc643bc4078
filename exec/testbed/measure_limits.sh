#!/bin/bash
# measure_limits.sh: the measurements behind the testbed's limits (exec/testbed/README.md).
#
# For each link rate R (MB/s) and MTU, builds a 5-host crossbar (h0..h3 and ps0, every link R
# and 1 ms, split duplex) as a testbed at scale 1 (prefix tpl-), and runs `tauplan testbed
# calibrate`: per route the round trip and the alpha-beta bandwidth against the configured ones,
# then 1 and 4 concurrent flows into ps0 with the fabric's CPU share. Then a crossbar with
# zero-latency links gives the testbed's own round-trip floor. Needs root; takes about 6 minutes.
# Usage: exec/testbed/measure_limits.sh [path/to/tauplan] [rates] [mtus]
set -euo pipefail
tauplan=${1:-build/cli/tauplan}
rates=${2:-"12.5 25 50 100 200"}
mtus=${3:-"1500 9000"}
work=$(mktemp -d /tmp/tauplan-limits-XXXXXX)
trap '"$tauplan" testbed down --prefix tpl- >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

crossbar() {  # crossbar RATE_MBps LATENCY FILE
  {
    echo "<?xml version='1.0'?>"
    echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
    echo '<platform version="4.1"><zone id="world" routing="Floyd">'
    for h in h0 h1 h2 h3 ps0; do
      role=worker; [ "$h" = ps0 ] && role=server
      echo "<host id=\"$h\" speed=\"1Gf\"><prop id=\"role\" value=\"$role\"/></host>"
    done
    echo '<router id="x"/>'
    for h in h0 h1 h2 h3 ps0; do
      echo "<link id=\"$h-link\" bandwidth=\"$1MBps\" latency=\"$2\" sharing_policy=\"SPLITDUPLEX\"/>"
    done
    for h in h0 h1 h2 h3 ps0; do
      echo "<route src=\"$h\" dst=\"x\"><link_ctn id=\"$h-link\" direction=\"UP\"/></route>"
    done
    echo '</zone></platform>'
  } > "$3"
}

for mtu in $mtus; do
  for rate in $rates; do
    crossbar "$rate" 1ms "$work/r.xml"
    echo "== $rate MB/s per link, 1 ms per link, MTU $mtu"
    "$tauplan" testbed up "$work/r.xml" --prefix tpl- --max-packet-rate 1e6 --mtu "$mtu" > /dev/null
    "$tauplan" testbed calibrate --prefix tpl- --out "$work/c.xml" --repeats 2 --sizes 4 \
      --transfer-time 0.3 --flows 1,4 --window 3 --no-duplex 2> /dev/null | tail -n +2
    "$tauplan" testbed status --prefix tpl- | grep "deliveries by lateness" || true
    "$tauplan" testbed down --prefix tpl- > /dev/null
  done
done

crossbar 25 0ms "$work/r.xml"
echo "== the testbed's own round trip: 25 MB/s links of zero latency, MTU 1500"
"$tauplan" testbed up "$work/r.xml" --prefix tpl- --mtu 1500 > /dev/null
"$tauplan" testbed calibrate --prefix tpl- --out "$work/c.xml" --pings 200 --repeats 2 --sizes 4 \
  --flows 1 --window 1 --no-duplex 2> /dev/null | tail -n +2 | head -8
"$tauplan" testbed down --prefix tpl- > /dev/null
