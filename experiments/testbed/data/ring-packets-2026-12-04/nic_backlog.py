#!/usr/bin/env python3
"""nic_backlog.py: each ring host's NIC queue rebuilt from its own sends (every TCP packet its
kernel handed to its interface enters a first-in-first-out queue served at 12.5 MB/s, payload +
52 bytes), its largest backlog per round (rounds 1-29, told by the agreed starts). Post hoc,
read after the run. Usage: python3 nic_backlog.py (from this folder) > nic_backlog.txt"""
import sys, statistics  # noqa: E401
sys.path.insert(0,'.')
import packets
addr=packets.address_of('.')
R=12.5e6
for name, ring in [("far-rdv","far"),("near-rdv","near"),("far-eager","far")]:
    hosts=packets.HOSTS[ring]
    starts, st = packets.read_steps(f"steps-{name}.txt.gz")
    res=[]
    for h in hosts:
        pk=packets.read_packets(f"packets-{name}-{h}.txt.gz")
        busy=0.0; peaks={}
        for t,d,src,dst,seq,pl in pk:
            if d!="out": continue
            start=max(t,busy); busy=start+(pl+52)/R
            backlog=(busy-t)*R  # bytes queued incl this packet
            rnd=None
            for r,t0 in starts.items():
                if t0<=t<t0+0.4: rnd=r
            if rnd is None or rnd==0: continue
            peaks[rnd]=max(peaks.get(rnd,0),backlog)
        res+= list(peaks.values())
        print(f"{name} {h}: per-round peak NIC-up backlog median {statistics.median(peaks.values())/1e3:.0f} KB, max {max(peaks.values())/1e3:.0f} KB")
