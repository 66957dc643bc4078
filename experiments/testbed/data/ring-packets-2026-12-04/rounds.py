#!/usr/bin/env python3
"""rounds.py: run.sh's rings, measured round against steps.py's rule (sim/rendezvous.hpp with
the nominal latencies of platforms/testbed-tier3-2to1.xml and store-and-forward), and each
step's excess over the rule given the measured entries. Usage: python3 rounds.py (from this
folder) > rounds.txt"""
import sys, statistics, os  # noqa: E401
sys.path.insert(0,'.'); sys.path.insert(0,'../ring-gap-diagnosis')
import steps, packets
steps.latency = lambda a,b: packets.route(a,b)[0]
steps.store_and_forward = lambda a,b: packets.forwarding(packets.route(a,b)[1])
for name in ["far-rdv","far-rdv-bare","far-eager","near-rdv"]:
    ring,size = name.split("-")[:2]
    hosts = packets.HOSTS[ring]; chunk = packets.CHUNK_BYTES[size]
    rounds = steps.read(f"steps-{name}.txt.gz")
    k=len(hosts); med=statistics.median
    meas=[max(r[x][-1][1] for x in r) for n,r in sorted(rounds.items()) if n>0]
    n=len(rounds[1][0])
    sim={r:[[0.0,0.0] for _ in range(n)] for r in range(k)}
    for s in range(n):
        if s>0:
            for r in range(k): sim[r][s][0]=sim[r][s-1][1]
        lv=steps.predicted_leave(sim,hosts,s,chunk,True)
        for r in range(k): sim[r][s][1]=lv[r]
    rule=max(sim[r][-1][1] for r in sim)
    ex=[]
    by_rank={r:[] for r in range(k)}
    for rn,ranks in rounds.items():
        if rn==0: continue
        for s in range(n):
            lv=steps.predicted_leave(ranks,hosts,s,chunk,True)
            for r in range(k): ex.append(ranks[r][s][1]-lv[r]); by_rank[r].append(ranks[r][s][1]-lv[r])
    print(f"{name}: measured round {1e3*med(meas):.1f} (min {1e3*min(meas):.1f}), rule {1e3*rule:.1f}, excess/step median {1e3*med(ex):.2f} mean {1e3*statistics.fmean(ex):.2f}; per rank median "+", ".join(f"{hosts[r]} {1e3*med(v):.2f}" for r,v in by_rank.items()))
