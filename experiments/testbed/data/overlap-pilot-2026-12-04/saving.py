#!/usr/bin/env python3
"""saving.py [DIR]: the overlap pilot's table from its two runs (DIR/out-overlap, DIR/out-plain;
DIR defaults to this file's folder): per row, the measured and CM02 rounds of both runs, CM02's
round error on each, the measured and predicted saving of overlap, (plain - overlap) / plain,
and the overlap run's share of buckets entered during the backward pass (its measure JSON).
Error = (predicted - measured) / measured. Prints the bounds of the protocol beside."""
import csv
import json
import os
import statistics
import sys


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def during_backward(out, index):
    path = os.path.join(out, "runs", "%02d-measure.json" % index)
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    data = json.loads(text[text.index("{"):])
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "buckets_entered_during_backward" in node:
                found.append(node["buckets_entered_during_backward"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    return min(found) if found else None


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    overlap = rows(os.path.join(here, "out-overlap", "testbed-validation.csv"))
    plain = rows(os.path.join(here, "out-plain", "testbed-validation.csv"))
    if len(overlap) != len(plain):
        sys.exit("saving.py: %d overlap rows against %d plain rows" % (len(overlap), len(plain)))
    print("| row | measured plain / overlap ms | CM02 plain / overlap ms | CM02 error plain / "
          "overlap | analytic error overlap | saving measured / CM02 / analytic | buckets during "
          "backward |")
    print("|---|---|---|---|---|---|---|")
    errors, gaps, shares = [], [], []
    for i, (o, p) in enumerate(zip(overlap, plain)):
        mo, mp = float(o["round_measured_s"]), float(p["round_measured_s"])
        co, cp = float(o["round_simgrid_cm02_s"]), float(p["round_simgrid_cm02_s"])
        ao, ap = float(o["round_analytic_s"]), float(p["round_analytic_s"])
        eo, ep, ea = (co - mo) / mo, (cp - mp) / mp, (ao - mo) / mo
        saving_m, saving_c, saving_a = (mp - mo) / mp, (cp - co) / cp, (ap - ao) / ap
        share = during_backward(os.path.join(here, "out-overlap"), i)
        errors.append(abs(eo))
        gaps.append(abs(saving_c - saving_m))
        shares.append(share)
        print("| %02d %s | %.1f / %.1f | %.1f / %.1f | %+.1f%% / %+.1f%% | %+.1f%% | %+.1f%% / "
              "%+.1f%% / %+.1f%% | %s |" % (
                  i, o["config"], mp * 1e3, mo * 1e3, cp * 1e3, co * 1e3, ep * 100, eo * 100,
                  ea * 100, saving_m * 100, saving_c * 100, saving_a * 100,
                  "?" if share is None else "%.2f" % share))
    print()
    print("bound 1: CM02 overlap-run median |e| %.1f%% (<= 5), largest %.1f%% (<= 15): %s" % (
        statistics.median(errors) * 100, max(errors) * 100,
        "holds" if statistics.median(errors) <= 0.05 and max(errors) <= 0.15 else "NOT MET"))
    print("bound 2: largest |CM02 saving - measured saving| %.1f points (<= 5): %s" % (
        max(gaps) * 100, "holds" if max(gaps) <= 0.05 else "NOT MET"))
    ok = all(s is not None and s >= 0.25 for s in shares)
    print("bound 3: least buckets_entered_during_backward %s (>= 0.25): %s" % (
        min((s for s in shares if s is not None), default="?"), "holds" if ok else "NOT MET"))


if __name__ == "__main__":
    main()
