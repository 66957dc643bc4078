#!/usr/bin/env python3
"""compute_vs_probe.py: each row's compute during its testbed run against its compute probes.

For the scale pilot's rows (out/) and the fourth held-out matrix's fashion rows
(../heldout4-first-run/fashion/): the measured compute (validate's median over rounds of the
busiest worker's compute + update, wall clock) beside each probe's (before, after) median over
its rounds of the busiest worker's seconds a step at the row's per-worker batch (what the engines
are given), its 75th percentile and largest round, and the median of any one worker's step.
Read after the runs (post hoc); nothing here enters a prediction. Usage: compute_vs_probe.py
(from this folder, or with the folder as argument); prints the table.
"""
import glob
import json
import os
import statistics
import sys


def quantile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def probe_columns(path):
    probe = json.load(open(path))
    first = probe["step_rounds"][0]  # the smallest batch: the row's own
    rounds = first["seconds_per_step_by_round_and_worker"]
    busiest = [max(r) for r in rounds]
    any_worker = [x for r in rounds for x in r]
    return (statistics.median(busiest), quantile(busiest, 0.75), max(busiest),
            statistics.median(any_worker))


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    sets = [("pilot", os.path.join(here, "out")),
            ("heldout4", os.path.join(here, "..", "heldout4-first-run", "fashion"))]
    print("set row K | measured median mean | probe before: busiest median p75 max, any worker"
          " | after: the same  (ms)")
    for name, folder in sets:
        for measure in sorted(glob.glob(os.path.join(folder, "runs", "[0-9][0-9]-measure.json"))):
            stem = measure[: -len("-measure.json")]
            i = int(os.path.basename(stem))
            m = json.load(open(stem + "-measure.json"))["results"][0]
            cells = [f"{name} {i:02d} {m['workers']:2d}",
                     f"{1e3 * m['compute_median_s']:6.2f} {1e3 * m['compute_s']:6.2f}"]
            for when in ("before", "after"):
                cells.append(" ".join(f"{1e3 * v:6.2f}"
                                      for v in probe_columns(f"{stem}-compute-{when}.json")))
            print(" | ".join(cells))


if __name__ == "__main__":
    main()
