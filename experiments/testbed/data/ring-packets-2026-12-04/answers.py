#!/usr/bin/env python3
"""answers.py: the rendezvous answers of run.sh's rings, where they wait, and what they cost the
round (post hoc, read after the run; no engine changed).

For each rendezvous step and hop (sender -> receiver), the receiver's answer (its first packet
with a payload back to the sender after the step's first data arrived) is timed from the
receiver's kernel handing it out to the sender's kernel receiving it, less the route's latency:
its delay. Beside it, the wait a first-in-first-out queue on the receiver's NIC-up link would
give it, fed by every packet the receiver's kernel sent (its own bulk to its right neighbour
among them), each serialised at 12.5 MB/s with 52 bytes of headers: how much of the delay is
queueing behind the receiver's own outgoing data. Then the round: steps.py's rule (sim/
rendezvous.hpp; nominal latencies, store-and-forward) replayed from the agreed start with each
(round, step, hop)'s measured answer delay added to the answer's trip, against the rule alone
and the measured round. Usage: answers.py [DIR]
"""
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "ring-gap-diagnosis"))
import packets  # noqa: E402
import steps  # noqa: E402

NIC_RATE = 12.5e6


# steps.py's rule on this platform's routes (as rounds.py sets it).
steps.latency = lambda a, b: packets.route(a, b)[0]
steps.store_and_forward = lambda a, b: packets.forwarding(packets.route(a, b)[1])


def replay(hosts, chunk, n_steps, extra):
    k = len(hosts)
    enter = [0.0] * k
    for s in range(n_steps):
        ranks = {r: {s: (enter[r], 0.0)} for r in range(k)}
        leave = steps.predicted_leave(ranks, hosts, s, chunk, forwarding=True, extra_back=extra[s])
        enter = leave
    return max(enter)


def main(folder):
    addr = packets.address_of(folder)
    for name, ring in (("far-rdv", "far"), ("near-rdv", "near")):
        hosts, chunk = packets.HOSTS[ring], packets.CHUNK_BYTES["rdv"]
        k = len(hosts)
        starts, st = packets.read_steps(os.path.join(folder, f"steps-{name}.txt.gz"))
        pk = {h: packets.read_packets(os.path.join(folder, f"packets-{name}-{h}.txt.gz"))
              for h in hosts}
        print(f"{name}:")
        delay_by = {}  # (round, step, hop) -> delay
        for r in range(k):
            snd, rcv = hosts[r], hosts[(r + 1) % k]
            a_s, a_r = addr[snd], addr[rcv]
            lat, _ = packets.route(rcv, snd)
            received = {seq: t for t, d, src, dst, seq, pl in pk[snd]
                        if d == "in" and src == a_r and dst == a_s and 0 < pl < 1000}
            busy, waits, delays = 0.0, [], []
            for t, d, src, dst, seq, pl in pk[rcv]:
                if d != "out":
                    continue
                start = max(t, busy)
                busy = start + (pl + 52) / NIC_RATE
                if dst == a_s and 0 < pl < 1000 and seq in received:
                    waits.append(start - t)
                    delay = received[seq] - t - lat
                    delays.append(delay)
                    # which (round, step): the receiver's step window holding t
                    for rnd, t0 in starts.items():
                        if rnd == 0 or rnd not in st:
                            continue
                        ranks = st[rnd]
                        for s, (e, lv) in ranks[(r + 1) % k].items():
                            if t0 + e - 1e-4 <= t <= t0 + lv:
                                delay_by.setdefault((rnd, s, r), delay)
            med, mean = statistics.median, statistics.fmean
            q = sorted(delays)
            print(f"  answer {rcv} -> {snd}: {len(delays)} answers, delay median "
                  f"{1e3 * med(delays):.2f} mean {1e3 * mean(delays):.2f} p90 "
                  f"{1e3 * q[int(0.9 * (len(q) - 1))]:.2f} max {1e3 * q[-1]:.2f} ms; a FIFO on {rcv}'s "
                  f"NIC up fed by its own sends: wait mean {1e3 * mean(waits):.2f} ms "
                  f"({100 * mean(waits) / mean(delays):.0f}% of the delay)")
        rounds = [rnd for rnd in st if rnd > 0 and len(st[rnd]) == k]
        n_steps = len(st[rounds[0]][0])
        measured = [max(st[rnd][r][n_steps - 1][1] for r in range(k)) for rnd in rounds]
        alone = replay(hosts, chunk, n_steps, [[0.0] * k for _ in range(n_steps)])
        with_answers = [replay(hosts, chunk, n_steps,
                               [[delay_by.get((rnd, s, r), 0.0) for r in range(k)]
                                for s in range(n_steps)]) for rnd in rounds]
        found = sum(1 for rnd in rounds for s in range(n_steps) for r in range(k)
                    if (rnd, s, r) in delay_by)
        print(f"  round: measured median {1e3 * statistics.median(measured):.1f} ms; the rule "
              f"{1e3 * alone:.1f}; the rule with each step's measured answer delays "
              f"{1e3 * statistics.median(with_answers):.1f} ({found} of "
              f"{len(rounds) * n_steps * k} answers placed)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else here)
