#!/usr/bin/env python3
"""packets.py: run.sh's rings, each step split at its packets (the reading its protocol wrote
first; experiments/testbed/README.md, "A ring step, packet by packet").

For every round after the first, step and hop (sender -> receiver = its right neighbour), from
the step traces (entry and exit per rank, each round's agreed start) and the sniffed packets
(each host's kernel's sends and receipts, CLOCK_MONOTONIC):
  start    sender's entry -> its first data packet of the step out        (the rule: 0)
  trip     that packet out -> in at the receiver                          (the route's latency)
  answer   rendezvous only: first data in at the receiver -> its answer (the first packet with a
           payload it sends back) out, and that answer's trip back to the sender; the rule: the
           receiver answers once it has entered, the trip is the reverse route's latency
  resume   rendezvous only: answer in at the sender -> its next data packet out (the rule: 0)
  bulk     the step's data packets: first out -> last in at the receiver, against bytes over the
           route's narrowest link plus the route's latency plus one packet forwarded on each
           other link (store-and-forward: the simulator's rule since cb8966d)
  finish   last data in at the receiver -> the receiver's exit (the rule: 0; the receiver may
           also wait for its own send)
Medians over rounds 1-29 and the 4 hops, per hop where they differ. The routes' latencies and
rates are platforms/testbed-tier3-2to1.xml's (hard-coded below). Usage: packets.py [DIR]
"""
import glob
import gzip
import os
import statistics
import sys

LEAF_UP_LATENCY = {"a": 0.5e-3, "b": 0.5e-3, "c": 0.5e-3, "d": 1.5e-3}
POD = {"a": 0, "b": 0, "c": 1, "d": 1}
NIC, LEAF_UP, POD_UP = 12.5e6, 25e6, 50e6
MTU = 9000
HOSTS = {"far": ["a-h3", "b-h3", "c-h3", "d-h3"], "near": ["a-h0", "a-h1", "a-h2", "a-h3"]}
CHUNK_BYTES = {"rdv": 58787 * 4, "eager": 14697 * 4}


def route(a, b):
    """(one-way latency s, [link rates]) of testbed-tier3-2to1.xml's route a -> b."""
    if a[0] == b[0]:
        return 1e-3, [NIC, NIC]
    lat = 1e-3 + LEAF_UP_LATENCY[a[0]] + LEAF_UP_LATENCY[b[0]]
    if POD[a[0]] == POD[b[0]]:
        return lat, [NIC, LEAF_UP, LEAF_UP, NIC]
    return lat + 1e-3, [NIC, LEAF_UP, POD_UP, POD_UP, LEAF_UP, NIC]


def forwarding(rates):
    per_link = [(MTU - 52) / r for r in rates]
    return sum(per_link) - max(per_link)


def read_steps(path):
    starts, steps = {}, {}
    with gzip.open(path, "rt") as f:
        for line in f:
            p = line.split()
            if p and p[0] == "start":
                starts[int(p[1])] = float(p[2])
            elif p and p[0] == "step" and len(p) == 6:
                steps.setdefault(int(p[1]), {}).setdefault(int(p[2]), {})[int(p[3])] = (
                    float(p[4]), float(p[5]))
    return starts, steps


def read_packets(path):
    """[(t, dir, src, dst, seq, payload)], duplicates (same dir, seq, payload, flags within 1
    us: the socket sees some outgoing packets twice) dropped."""
    out, seen = [], set()
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#"):
                continue
            t, d, src, dst, _len, _sp, _dp, seq, ack, flags, payload = line.split()
            key = (d, src, dst, seq, ack, flags, payload, round(float(t), 6))
            if key in seen:
                continue
            seen.add(key)
            out.append((float(t), d, src, dst, int(seq), int(payload)))
    out.sort()
    return out


def address_of(folder):
    addr = {}
    with open(os.path.join(folder, "testbed-up.txt")) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5 and p[0].isdigit():
                addr[p[1]] = p[4]
    return addr


def analyse(folder, name):
    ring, size = name.split("-")[0], name.split("-")[1]
    hosts, chunk = HOSTS[ring], CHUNK_BYTES[size]
    starts, steps = read_steps(os.path.join(folder, f"steps-{name}.txt.gz"))
    addr = address_of(folder)
    pk = {h: read_packets(os.path.join(folder, f"packets-{name}-{h}.txt.gz")) for h in hosts}
    k = len(hosts)
    phases = {}  # (hop, phase) -> [values]

    def add(hop, phase, value):
        phases.setdefault((hop, phase), []).append(value)

    for rnd in sorted(steps):
        if rnd == 0 or rnd not in starts or len(steps[rnd]) != k:
            continue
        t0 = starts[rnd]
        n = len(steps[rnd][0])
        for s in range(n):
            for r in range(k):
                right = (r + 1) % k
                snd, rcv = hosts[r], hosts[right]
                a_s, a_r = addr[snd], addr[rcv]
                enter_s = t0 + steps[rnd][r][s][0]
                next_enter = t0 + (steps[rnd][r][s + 1][0] if s + 1 < n else steps[rnd][r][s][1] + 0.05)
                leave_r = t0 + steps[rnd][right][s][1]
                # The sender's data packets of this step: out at the sender, between its entry
                # and its entry of the next step.
                outs = [(t, seq, pl) for t, d, src, dst, seq, pl in pk[snd]
                        if d == "out" and src == a_s and dst == a_r and pl > 0 and enter_s - 1e-4 <= t < next_enter]
                if not outs:
                    continue
                seqs = {seq for _, seq, _ in outs}
                ins = [t for t, d, src, dst, seq, pl in pk[rcv]
                       if d == "in" and src == a_s and dst == a_r and pl > 0 and seq in seqs and t >= enter_s - 1e-4]
                if not ins:
                    continue
                lat, rates = route(snd, rcv)
                back_lat, _ = route(rcv, snd)
                sent = sum(pl for _, _, pl in outs)
                add(r, "bytes", sent)
                add(r, "start", outs[0][0] - enter_s)
                add(r, "trip", min(ins) - outs[0][0])
                add(r, "trip - latency", min(ins) - outs[0][0] - lat)
                if size == "rdv":
                    first_in = min(ins)
                    answers = [t for t, d, src, dst, seq, pl in pk[rcv]
                               if d == "out" and src == a_r and dst == a_s and 0 < pl < 1000 and t >= first_in - 1e-4 and t < leave_r + 1e-3]
                    if answers:
                        ans_out = answers[0]
                        enter_r = t0 + steps[rnd][right][s][0]
                        add(r, "answer wait (after first in and receiver's entry)", ans_out - max(first_in, enter_r))
                        back = [t for t, d, src, dst, seq, pl in pk[snd]
                                if d == "in" and src == a_r and dst == a_s and 0 < pl < 1000 and t >= ans_out - 1e-4]
                        if back:
                            add(r, "answer trip - latency", back[0] - ans_out - back_lat)
                            resumed = [t for t, _, _ in outs if t >= back[0]]
                            if resumed:
                                add(r, "resume", resumed[0] - back[0])
                                bulk = [(t, seq, pl) for t, seq, pl in outs if t >= back[0]]
                                bseqs = {seq for _, seq, _ in bulk}
                                bins = [t for t, d, src, dst, seq, pl in pk[rcv]
                                        if d == "in" and src == a_s and dst == a_r and pl > 0 and seq in bseqs]
                                bbytes = sum(pl for _, _, pl in bulk)
                                rule = lat + bbytes / min(rates) + forwarding(rates)
                                add(r, "bulk - rule", max(bins) - resumed[0] - rule)
                                add(r, "bulk bytes", bbytes)
                else:
                    rule = lat + sent / min(rates) + forwarding(rates)
                    add(r, "bulk - rule", max(ins) - outs[0][0] - rule)
                add(r, "finish", leave_r - max(ins))
    return hosts, phases


def main(folder):
    for path in sorted(glob.glob(os.path.join(folder, "steps-*.txt.gz"))):
        name = os.path.basename(path)[len("steps-"):-len(".txt.gz")]
        if name.endswith("-bare"):
            continue
        hosts, phases = analyse(folder, name)
        k = len(hosts)
        print(f"{name}: medians over rounds 1-29, ms (bytes as counted)")
        names = []
        for (_, ph) in phases:
            if ph not in names:
                names.append(ph)
        for ph in names:
            cells = []
            for r in range(k):
                v = phases.get((r, ph), [])
                if v:
                    m = statistics.median(v)
                    cells.append(f"{hosts[r]}->{hosts[(r + 1) % k]} " + (f"{m:.0f}" if "bytes" in ph else f"{1e3 * m:.2f}"))
            print(f"  {ph:<52} " + "; ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
