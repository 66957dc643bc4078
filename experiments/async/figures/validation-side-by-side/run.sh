#!/usr/bin/env bash
# The record of the 2026-12-01 run, with that machine's paths (a worktree of 10b988a in
# /tmp/old-src, its build in /tmp/tauplan-old; main's build of 1fdeb3e in /tmp/tauplan-new).
# old = 10b988a (before async-ps moved onto PeerGroup), new = main's build (1fdeb3e sources)
set -u
mkdir -p /tmp/sbs
for i in 1 2 3; do
  for which in old new; do
    if [ $which = old ]; then src=/tmp/old-src; bin=/tmp/tauplan-old; else src=/work/main; bin=/tmp/tauplan-new; fi
    echo "$which-$i start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/sbs/log
    (cd $src && $bin validate experiments/async/validate.yaml --set workers=1,2 --set batch=32,64 \
       --slow-worker 1,2 --out /tmp/sbs/$which-$i > /tmp/sbs/$which-$i.txt 2> /tmp/sbs/$which-$i.err)
    echo "$which-$i end rc=$? $(date -u +%H:%M:%S)" >> /tmp/sbs/log
  done
done
echo done >> /tmp/sbs/log
