#!/usr/bin/env python3
"""model_replay.py: would a rendezvous answer that waits behind its sender's queued bytes close
the rings' gap? Post hoc (read after the runs, on the rings it was found on: training-set
figures, no engine changed).

steps.py's rule (sim/rendezvous.hpp: request on entry, answer once the request has arrived and
the receiver has entered, then the chunk; nominal latencies of testbed-tier3-2to1.xml, store-and-
forward), run from an agreed start, with one change: every host's NIC is a first-in-first-out
queue; a host's chunk, once its answer arrives, is handed to it whole and leaves at 12.5 MB/s;
a request or answer a host sends at t waits min(the bytes it still has queued at t, W) / 12.5
MB/s, W the window TCP keeps queued (queue-behind-2026-12-04: 76-220 KB on this testbed). Within
a step the hosts' waits depend on each other round the ring, so each step is iterated to a fixed
point. W = 0 is the rule as the simulator runs it. Usage: model_replay.py [DIR]
"""
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import packets  # noqa: E402

RATE = 12.5e6


def round_time(hosts, chunk, n_steps, window):
    k = len(hosts)
    enter = [0.0] * k
    # Each host's queued chunks: (start, end) of their time at the NIC, in order.
    queued = [[] for _ in range(k)]

    def wait(h, t):
        left = sum(max(0.0, end - max(t, start)) for start, end in queued[h] if start <= t)
        return min(left, window / RATE)

    for _ in range(n_steps):
        lat = [packets.route(hosts[r], hosts[(r + 1) % k])[0] for r in range(k)]
        back = [packets.route(hosts[(r + 1) % k], hosts[r])[0] for r in range(k)]
        fwd = [packets.forwarding(packets.route(hosts[r], hosts[(r + 1) % k])[1]) for r in range(k)]
        bulk_start = [None] * k
        for _ in range(50):
            trial = [list(q) for q in queued]
            for r in range(k):
                if bulk_start[r] is not None:
                    trial[r].append((bulk_start[r], bulk_start[r] + chunk / RATE))
            saved, queued[:] = queued[:], trial
            new = []
            for r in range(k):
                right = (r + 1) % k
                request_in = enter[r] + wait(r, enter[r]) + lat[r]
                answer_out = max(request_in, enter[right])
                new.append(answer_out + wait(right, answer_out) + back[r])
            queued[:] = saved
            if new == bulk_start:
                break
            bulk_start = new
        for r in range(k):
            queued[r].append((bulk_start[r], bulk_start[r] + chunk / RATE))
        recv_done = [0.0] * k
        for r in range(k):
            right = (r + 1) % k
            recv_done[right] = bulk_start[r] + lat[r] + chunk / RATE + fwd[r]
        enter = [max(bulk_start[r], recv_done[r]) for r in range(k)]
    return max(enter)


def main(folder):
    measured = {}
    for line in open(os.path.join(folder, "rounds.txt")):
        name = line.split(":")[0]
        measured[name] = float(line.split("measured round ")[1].split()[0])
    for name, ring in (("far-rdv", "far"), ("near-rdv", "near")):
        hosts, chunk = packets.HOSTS[ring], packets.CHUNK_BYTES["rdv"]
        n_steps = 2 * (len(hosts) - 1)
        cells = [f"W = {w // 1000} KB: {1e3 * round_time(hosts, chunk, n_steps, w):.1f}"
                 for w in (0, 76000, 139000, 220000, 10 ** 9)]
        print(f"{name}: measured {measured[name]:.1f} ms; the rule with answers behind the queue, "
              + "; ".join(cells).replace("1000000 KB", "the whole chunk"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else here)
