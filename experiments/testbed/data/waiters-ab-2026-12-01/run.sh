#!/bin/bash
# A/B: message probe waiters spin vs asleep, alternating, 4 each, testbed-ps8.
B=/tmp/build-pch/cli/tauplan
cd /work/main
$B testbed down --prefix tpw- >/dev/null 2>&1
$B testbed up platforms/testbed-ps8.xml --prefix tpw- > /work/runs/waiters/up.txt 2>&1 || exit 1
vmstat 30 > /work/runs/waiters/vmstat.txt &
VM=$!
i=0
for pass in 1 2 3 4; do
  for w in spin asleep; do
    i=$((i+1))
    echo "$(date -u +%T) run $i $w" >> /work/runs/waiters/log.txt
    $B testbed calibrate --prefix tpw- --mpi --json --mpi-waiters $w --out /work/runs/waiters/$i-$w.xml > /work/runs/waiters/$i-$w.json 2> /work/runs/waiters/$i-$w.err
    # NB: the rc logged below is date's (the command substitution runs first): always 0; the
    # .err files say how each calibration ended.
    echo "$(date -u +%T) rc=$?" >> /work/runs/waiters/log.txt
  done
done
kill $VM
$B testbed down --prefix tpw- >> /work/runs/waiters/up.txt 2>&1
echo done >> /work/runs/waiters/log.txt
