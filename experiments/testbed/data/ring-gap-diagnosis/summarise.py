#!/usr/bin/env python3
"""summarise.py: the ring-gap diagnosis's runs side by side (run.sh writes them).

For each run: the measured round (median over rounds of the slowest rank's round, and the mean),
the median compute and collective parts as measure reports them, and, from the trace of the
first 64 rounds, each round's span (the earliest span start to the latest span end, over every
rank) split by whether an evaluation on rank 0 came just before the round (the job evaluates
after every 2nd round: rounds 2, 4, 6, ... follow one) or not. Usage: summarise.py DIR
"""
import glob
import gzip
import json
import os
import statistics
import sys


def trace_rounds(path):
    """{round: (first start, last end)} over every rank's spans, seconds."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    spans = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        r = e.get("args", {}).get("round")
        r = int(r) if r is not None else None
        if r is None:
            continue
        start = e["ts"] * 1e-6
        end = start + e.get("dur", 0) * 1e-6
        first, last = spans.get(r, (start, end))
        spans[r] = (min(first, start), max(last, end))
    return spans


def runs(folder):
    """(name, the measure's result or None) of every run's JSON, in name order."""
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        name = os.path.basename(path)[:-5]
        try:
            with open(path) as f:
                yield name, json.load(f)["results"][0]
        except (OSError, ValueError, KeyError, IndexError):
            yield name, None


def by_ring(folder):
    """{(ring, scale): [comm_s of each run]} over the runs (scale 2: the ring16-scale2-* runs)."""
    out = {}
    for name, r in runs(folder):
        if r is None:
            continue
        key = (name.split("-")[0], 2 if "-scale2-" in name else 1)
        out.setdefault(key, []).append(r["S_s"])
    return out


def cm02_of(folder, config):
    """CM02's round and comm (s) for `config`'s first row in the second held-out run."""
    import csv
    path = os.path.join(folder, "..", "heldout2-first-run", "fashion", "testbed-validation.csv")
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["config"] == config:
                return float(row["round_simgrid_cm02_s"]), float(row["comm_simgrid_cm02_s"])
    return float("nan"), float("nan")


def main(folder):
    print(f"{'run':34s} {'median':>7s} {'mean':>7s} {'comp':>5s} {'comm':>6s} "
          f"{'late':>5s} | {'after eval':>10s} {'other':>7s} (trace, median ms, rounds)")
    for name, r in runs(folder):
        if r is None:
            print(f"{name:34s} (no result)")
            continue
        ms = lambda k: 1e3 * r.get(k, float("nan"))
        line = (f"{name:34s} {ms('round_median_s'):7.1f} {ms('round_s'):7.1f} "
                f"{ms('compute_median_s'):5.1f} {ms('S_s'):6.1f} "
                f"{ms('round_start_lateness_median_s'):5.1f}")
        trace = os.path.join(folder, name + ".trace.json.gz")
        if os.path.exists(trace):
            spans = trace_rounds(trace)
            every = r.get("eval_every_rounds", 2)
            after = [1e3 * (b - a) for k, (a, b) in spans.items() if k > 0 and k % every == 0]
            other = [1e3 * (b - a) for k, (a, b) in spans.items() if k > 0 and k % every != 0]
            if after and other:
                line += (f" | {statistics.median(after):10.1f} {statistics.median(other):7.1f}"
                         f" ({len(after)}/{len(other)})")
        print(line)
    comm = by_ring(folder)
    print("collective (median over runs, ms; at scale 2 halved: per unit of scaled time):")
    for (ring, scale), values in sorted(comm.items()):
        print(f"  {ring} at scale {scale}: {1e3 * statistics.median(values) / scale:6.1f} "
              f"over {len(values)} runs ({1e3 * min(values) / scale:.1f}-"
              f"{1e3 * max(values) / scale:.1f})")
    for ring, config in (("ring16", "fa2: sync ring K=16 b=256"), ("ring3", "fa2: sync ring K=3 b=96")):
        round_s, comm_s = cm02_of(folder, config)
        print(f"  {ring}: CM02 in the second held-out run (its row's calibrated platform, scale 1): "
              f"round {1e3 * round_s:.1f}, comm {1e3 * comm_s:.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
