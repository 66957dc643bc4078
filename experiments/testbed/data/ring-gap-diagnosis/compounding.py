#!/usr/bin/env python3
"""compounding.py: how the ring steps' small excesses become a large excess of the round.

Post hoc (2026-12-04), on the step traces of run-steps.sh (2026-12-03) and steps-again/; nothing
is measured here and no engine is changed. steps.py found each step of the ring of 16 0.6-0.7 ms
(median) over the simulator's rule with store-and-forward, yet its round 68 ms over it, not the
~21 ms of 30 medians. The question: is that the spread of the excesses, compounded by the ring
(a rank's late exit delays its neighbour's next receive, so the round is the longest chain
through a lattice of ranks x steps, and a longest chain collects the large values, not the
median ones), or something the excesses do not show?

Replays of the rule with store-and-forward (steps.predicted_leave), every rank entering step
s + 1 when it left step s, each (rank, step) leave delayed by an excess:
  measured   each (round, rank, step)'s own measured excess: reproduces the measured round up to
             the gaps between a leave and the next entry (an identity; the check of the replay);
  median     every excess the median of all of them (the "sum of medians" view);
  mean       every excess the mean of all of them;
  shuffled   each round's excesses permuted at random over its (rank, step) cells: the same
             values, their placement random (200 draws, seed 1);
  pooled     every excess drawn at random from the pooled excesses of all rounds (200 draws).
If the shuffled and pooled replays reach the measured round, the spread of the excesses is what
compounds, whatever causes them; if they fall short, their placement (which ranks, which steps)
carries the rest. Usage: compounding.py [DIR ...] (default: this folder and steps-again/).
"""
import glob
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steps  # noqa: E402  (this folder's steps.py: read, predicted_leave, HOSTS, CHUNK)


def replay(hosts, chunk, n_steps, excess):
    """The round (s) of the rule with store-and-forward run from an agreed start, each rank's
    leave of step s delayed by excess[rank][s], each rank entering step s + 1 at its leave."""
    k = len(hosts)
    sim = {r: [[0.0, 0.0] for _ in range(n_steps)] for r in range(k)}
    for s in range(n_steps):
        if s > 0:
            for r in range(k):
                sim[r][s][0] = sim[r][s - 1][1]
        leave = steps.predicted_leave(sim, hosts, s, chunk, forwarding=True)
        for r in range(k):
            sim[r][s][1] = max(sim[r][s][0], leave[r] + excess[r][s])
    return max(sim[r][-1][1] for r in range(k))


def analyse(path, name):
    rounds = steps.read(path)
    hosts, chunk = steps.HOSTS[name], steps.CHUNK[name]
    k = len(hosts)
    med = statistics.median
    measured, per_round_excess, pooled = [], [], []
    for rnd, ranks in sorted(rounds.items()):
        if rnd == 0 or len(ranks) != k:
            continue
        n = len(ranks[0])
        start = min(ranks[r][0][0] for r in ranks)
        shifted = {r: [(a - start, b - start) for a, b in ranks[r]] for r in ranks}
        measured.append(max(shifted[r][-1][1] for r in shifted))
        ex = [[0.0] * n for _ in range(k)]
        for s in range(n):
            leave = steps.predicted_leave(shifted, hosts, s, chunk, forwarding=True)
            for r in range(k):
                ex[r][s] = shifted[r][s][1] - leave[r]
        per_round_excess.append(ex)
        pooled.extend(v for row in ex for v in row)
    if not measured:
        return None
    n = len(per_round_excess[0][0])
    rng = random.Random(1)
    zero = [[0.0] * n for _ in range(k)]
    const = lambda v: [[v] * n for _ in range(k)]  # noqa: E731
    out = {
        "measured round": med(measured),
        "rule + forwarding": replay(hosts, chunk, n, zero),
        "replay: measured": med(replay(hosts, chunk, n, ex) for ex in per_round_excess),
        "replay: median": replay(hosts, chunk, n, const(med(pooled))),
        "replay: mean": replay(hosts, chunk, n, const(statistics.fmean(pooled))),
    }
    shuffled = []
    for _ in range(200):
        ex = per_round_excess[rng.randrange(len(per_round_excess))]
        flat = [v for row in ex for v in row]
        rng.shuffle(flat)
        shuffled.append(replay(hosts, chunk, n, [flat[r * n:(r + 1) * n] for r in range(k)]))
    out["replay: shuffled"] = med(shuffled)
    drawn = [replay(hosts, chunk, n, [[rng.choice(pooled) for _ in range(n)] for _ in range(k)])
             for _ in range(200)]
    out["replay: pooled"] = med(drawn)
    per_rank = [[ex[r][s] for ex in per_round_excess for s in range(n)] for r in range(k)]
    out["per rank"] = [(hosts[r], med(v), statistics.fmean(v)) for r, v in enumerate(per_rank)]
    q = sorted(pooled)
    stats = (f"excess a step: median {1e3 * med(q):.2f}, mean {1e3 * statistics.fmean(q):.2f}, "
             f"p90 {1e3 * q[int(0.9 * (len(q) - 1))]:.2f}, p99 {1e3 * q[int(0.99 * (len(q) - 1))]:.2f}, "
             f"max {1e3 * q[-1]:.2f} ms over {len(q)} (rank, step) cells of {len(measured)} rounds")
    return out, stats


def main(folders):
    for folder in folders:
        for name in steps.HOSTS:
            for path in sorted(glob.glob(os.path.join(folder, f"steps-{name}-[0-9].txt.gz"))):
                got = analyse(path, name)
                if got is None:
                    continue
                out, stats = got
                rel = os.path.relpath(path, os.path.dirname(os.path.abspath(__file__)))
                print(f"{rel}: {stats}")
                base = out["rule + forwarding"]
                per_rank = out.pop("per rank")
                for key, v in out.items():
                    over = "" if key in ("rule + forwarding",) else f"  (+{1e3 * (v - base):.1f} over the rule)"
                    print(f"  {key:<20} {1e3 * v:7.1f} ms median over rounds{over}")
                gap = out["measured round"] - base
                print(f"  of the measured round's excess over the rule: mean replay "
                      f"{100 * (out['replay: mean'] - base) / gap:.0f}%, shuffled "
                      f"{100 * (out['replay: shuffled'] - base) / gap:.0f}%; replay of the measured "
                      f"excesses short of the round by "
                      f"{1e3 * (out['measured round'] - out['replay: measured']):.1f} ms")
                print("  per rank (median, mean ms): " + ", ".join(
                    f"{h} {1e3 * m:.2f}/{1e3 * a:.2f}" for h, m, a in per_rank))


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    main(sys.argv[1:] or [here, os.path.join(here, "steps-again")])
