#!/usr/bin/env python3
"""summarise.py: run.sh's pings, the delay each took over its route's 1 ms one way, by message
and route. Per (route, size), over rounds 1-14: the message's median time to done at the
receiver; the pings sent before the message is done: delay median, p90, max; and the median
over rounds of each round's largest delay. Usage: summarise.py [DIR] > summary.txt"""
import glob
import os
import statistics
import sys

ROUTE_S = {"a-h1": 1e-3, "b-h0": 2e-3, "d-h0": 4e-3}
PING_ROUTE_S = 1e-3  # a-h0 -> a-h2, inside leaf a


def main(folder):
    print("route   bytes     done ms | pings before done: n, delay median / p90 / max ms | "
          "each round's largest, median ms | whole message at 12.5 MB/s, ms")
    for y in ROUTE_S:
        for path in sorted(glob.glob(os.path.join(folder, f"queue-{y}-*.txt")),
                           key=lambda p: int(p.rsplit("-", 1)[1][:-4])):
            size = int(path.rsplit("-", 1)[1][:-4])
            done, pings = {}, {}
            with open(path) as f:
                for line in f:
                    p = line.split()
                    if p and p[0] == "done":
                        done[int(p[1])] = float(p[2])
                    elif p and p[0] == "ping":
                        pings.setdefault(int(p[1]), []).append((float(p[2]), float(p[3])))
            rounds = [r for r in sorted(done) if r > 0]
            delays, largest = [], []
            for r in rounds:
                ds = [arr - sent - PING_ROUTE_S for sent, arr in pings.get(r, []) if sent < done[r]]
                delays += ds
                if ds:
                    largest.append(max(ds))
            q = sorted(delays)
            med = statistics.median
            print(f"{y}  {size:9d} {1e3 * med(done[r] for r in rounds):8.1f} | {len(q):4d}, "
                  f"{1e3 * med(q):6.2f} / {1e3 * q[int(0.9 * (len(q) - 1))]:6.2f} / "
                  f"{1e3 * q[-1]:6.2f} | {1e3 * med(largest):6.2f} | {1e3 * size / 12.5e6:6.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
