#!/usr/bin/env python3
"""steps.py: run-steps.sh's rings step by step, against the rule the simulator runs them by.

For every step of every rank, ring_steps.cpp gives when the rank entered and left MPI_Sendrecv
(one clock for all ranks). The simulator's rule for one step (sim/rendezvous.hpp), with the
route's nominal one-way latency L and the NIC's 12.5 MB/s: a chunk at or below OpenMPI's eager
limit (64 KiB) arrives at the receiver L + bytes / rate after its sender entered the step, and is
received once the receiver has entered too; the sender is done at once. Above it, a request
leaves when the sender enters, the receiver answers once the request has arrived and it has
entered itself, the answer takes the reverse route's latency back, then the bytes go (L + bytes
/ rate); the sender is done when the answer arrives, the receiver when the bytes do. A rank leaves
the step when its send and its receive are done. Given the measured entries, the rule predicts
each leave; the excess (measured less predicted) is what the rule leaves out, step by step.
Rounds after the first; medians. Usage: steps.py DIR
"""
import glob
import gzip
import os
import statistics
import sys

RATE = 12.5e6
EAGER = 65536
HOSTS = {
    "ring3-leaves": ["a-h2", "b-h2", "c-h2"],
    "ring3-leaf-a": ["a-h0", "a-h1", "a-h2"],
    "ring16": [f"{leaf}-h{i}" for leaf, n in (("a", 6), ("b", 6), ("c", 4)) for i in range(n)],
}
CHUNK = {"ring3-leaves": 78383 * 4, "ring3-leaf-a": 78383 * 4, "ring16": 14697 * 4}
# ../host-contention-2026-12-04/run.sh: a ring of 4 in leaf a, alone and beside a ring of 10.
for _size, _floats in (("eager", 14697), ("rdv", 78383)):
    for _load in ("alone", "loaded"):
        HOSTS[f"ring4-{_size}-{_load}"] = ["a-h0", "a-h1", "a-h2", "a-h3"]
        CHUNK[f"ring4-{_size}-{_load}"] = _floats * 4


def latency(a, b):
    """One-way latency of testbed-fattree3-2to1.xml's route a -> b: NICs 0.5 ms, uplinks of
    leaves a and b 0.5 ms, of leaf c 2.5 ms."""
    if a[0] == b[0]:
        return 1e-3
    uplink = {"a": 0.5e-3, "b": 0.5e-3, "c": 2.5e-3}
    return 1e-3 + uplink[a[0]] + uplink[b[0]]


MTU = 9000  # the testbed's at scale 1 (steps-testbed-up.txt)
UPLINK_RATE = {"a": 37.5e6, "b": 37.5e6, "c": 25e6}


def store_and_forward(a, b):
    """What the fabric adds to a bulk transfer a -> b over the pipe model (latency + bytes /
    slowest rate): each link forwards a packet only once it has all of it, so a full packet is
    serialised once per link: the sum over the route's links of MTU / wire rate, less the
    slowest link's (whose packets the pipe model already counts). Wire rate = payload rate x MTU
    / (MTU - 52): the fabric charges IP bytes."""
    rates = [RATE, RATE] if a[0] == b[0] else [RATE, UPLINK_RATE[a[0]], UPLINK_RATE[b[0]], RATE]
    per_link = [(MTU - 52) / r for r in rates]
    return sum(per_link) - max(per_link)


def read(path):
    """{round: {rank: [(enter, leave) per step]}}"""
    out = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 6 or parts[0] != "step":
                continue
            rnd, rank, step = int(parts[1]), int(parts[2]), int(parts[3])
            out.setdefault(rnd, {}).setdefault(rank, {})[step] = (float(parts[4]), float(parts[5]))
    return {r: {k: [v[s] for s in sorted(v)] for k, v in ranks.items()} for r, ranks in out.items()}


def predicted_leave(ranks, hosts, step, chunk, forwarding=False, extra_back=None):
    """The rule's leave time of every rank in `step`, from the measured entries; with
    `forwarding`, each chunk's transfer also pays store_and_forward; with `extra_back`, the
    answer of hop r -> r + 1 (rendezvous) is extra_back[r] seconds later on its way back."""
    k = len(hosts)
    enter = [ranks[r][step][0] for r in range(k)]
    recv_done, send_done = [0.0] * k, [0.0] * k
    for r in range(k):
        right = (r + 1) % k
        fwd, back = latency(hosts[r], hosts[right]), latency(hosts[right], hosts[r])
        bytes_s = chunk / RATE + (store_and_forward(hosts[r], hosts[right]) if forwarding else 0)
        if chunk <= EAGER:
            send_done[r] = enter[r]
            recv_done[right] = max(enter[r] + fwd + bytes_s, enter[right])
        else:
            answered = max(enter[r] + fwd, enter[right])
            send_done[r] = answered + back + (extra_back[r] if extra_back else 0.0)
            recv_done[right] = send_done[r] + fwd + bytes_s
    return [max(send_done[r], recv_done[r]) for r in range(k)]


def main(folder):
    for name in HOSTS:
        for path in sorted(glob.glob(os.path.join(folder, f"steps-{name}-[0-9].txt.gz"))):
            rounds = read(path)
            hosts, chunk = HOSTS[name], CHUNK[name]
            if not rounds:
                continue
            med = statistics.median
            round_s = [max(ranks[r][-1][1] for r in ranks)
                       for rnd, ranks in sorted(rounds.items()) if rnd > 0]
            print(f"{os.path.basename(path)}: measured round {1e3 * med(round_s):.1f} ms")
            for forwarding in (False, True):
                excess_by_step, ruled = {}, []
                for rnd, ranks in sorted(rounds.items()):
                    if rnd == 0 or len(ranks) != len(hosts):
                        continue
                    steps = len(ranks[0])
                    # The rule run alone from the agreed start (every rank enters step 0 at 0).
                    sim = {r: [[0.0, 0.0] for _ in range(steps)] for r in ranks}
                    for s in range(steps):
                        if s > 0:
                            for r in ranks:
                                sim[r][s][0] = sim[r][s - 1][1]
                        leave = predicted_leave(sim, hosts, s, chunk, forwarding)
                        for r in ranks:
                            sim[r][s][1] = leave[r]
                    ruled.append(max(sim[r][-1][1] for r in sim))
                    for s in range(steps):
                        leave = predicted_leave(ranks, hosts, s, chunk, forwarding)
                        for r in ranks:
                            excess_by_step.setdefault(s, []).append(ranks[r][s][1] - leave[r])
                excess = [med(v) for _, v in sorted(excess_by_step.items())]
                print(f"  the rule{' with store-and-forward' if forwarding else ''}: round "
                      f"{1e3 * med(ruled):.1f} ms; excess per step (median over ranks and rounds) "
                      f"{1e3 * min(excess):.2f}-{1e3 * max(excess):.2f} ms, median {1e3 * med(excess):.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
