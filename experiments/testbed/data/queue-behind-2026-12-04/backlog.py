#!/usr/bin/env python3
"""backlog.py: run-sniffed.sh's sender, its NIC's queue rebuilt from its own sends.

Every TCP packet a-h0's kernel handed to its interface (sniff.py, kernel timestamps) enters a
first-in-first-out queue served at 12.5 MB/s (payload + 52 bytes of headers, as the fabric
charges them); the queue's bytes just after each packet is the backlog a small packet sent then
would wait behind. Messages are told apart by gaps of 20 ms without a send; per message size
and route, over the 14 messages after the first: the median of each message's largest backlog,
in KB and in ms at 12.5 MB/s, against the message's size. Usage: backlog.py [DIR]"""
import glob
import gzip
import os
import statistics
import sys

RATE = 12.5e6


def peaks(path):
    sends = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#"):
                continue
            p = line.split()
            if p[1] == "out":
                sends.append((float(p[0]), int(p[10])))
    sends.sort()
    out, busy, last, peak = [], 0.0, None, 0.0
    for t, payload in sends:
        if last is not None and t - last > 0.02:
            out.append(peak)
            peak = 0.0
        last = t
        start = max(t, busy)
        busy = start + (payload + 52) / RATE
        peak = max(peak, (busy - t) * RATE)
    out.append(peak)
    return [p for p in out if p > 20000]  # messages, not the round's small exchanges


def main(folder):
    print("route  bytes      messages  largest backlog per message: median KB (ms at 12.5 MB/s), "
          "max KB | message KB")
    for path in sorted(glob.glob(os.path.join(folder, "sniffed-packets-*.txt.gz"))):
        _, _, y1, y2, size = os.path.basename(path)[:-7].split("-")
        p = peaks(path)[1:]
        if not p:
            continue
        m = statistics.median(p)
        print(f"{y1}-{y2}  {int(size):9d}  {len(p):3d}       {m / 1e3:7.1f} ({1e3 * m / RATE:6.1f}), "
              f"{max(p) / 1e3:7.1f} | {int(size) / 1e3:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
