#!/usr/bin/env python3
"""analyse.py DIR: the statistics of experiments/testbed/README.md, "Why the compute probe moves".

Reads DIR/ROW-launch-N.json (`tauplan testbed compute-probe` output with `step_rounds`: per batch
size, every round's seconds per step of each worker). For each row and batch size, per launch:
  S12    median over rounds 1-12 of the busiest worker (what validate's probe takes today),
  S48    the same over all 48 rounds,
  Q25    the lower quartile over the 48 rounds of the busiest worker,
  MEANW  median over the 48 rounds of the workers' mean;
then, per statistic, the spread (largest / smallest - 1, %) across the launches, and two spreads
of four values each, to tell sampling noise from a state that holds through a launch:
  within   median over launches of the spread of S12 over the launch's four 12-round blocks,
  between  median over launches 1-4 and 5-8 of the spread of their S12 (block 1),
and VAL, the spread over launch pairs (1,2), (3,4), (5,6), (7,8) of the pair's mean S12 (validate
predicts from the mean of a probe before and one after the measured runs).
"""
import glob
import json
import os
import re
import statistics
import sys


def spread(values):
    return 100.0 * (max(values) / min(values) - 1.0)


def quantile(values, q):
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def main(folder):
    launches = {}
    for path in glob.glob(os.path.join(folder, "*-launch-*.json")):
        match = re.match(r"(.*)-launch-(\d+)\.json$", os.path.basename(path))
        launches.setdefault(match.group(1), {})[int(match.group(2))] = json.load(open(path))
    print("row,batch,launches,S12_spread_pct,S48_spread_pct,Q25_spread_pct,MEANW_spread_pct,"
          "within_pct,between_pct,VAL_spread_pct,S12_median_ms,S48_median_ms")
    for row in sorted(launches):
        docs = [launches[row][n] for n in sorted(launches[row])]
        for bi, entry in enumerate(docs[0]["step_rounds"]):
            stats = {"S12": [], "S48": [], "Q25": [], "MEANW": []}
            blocks = []
            for doc in docs:
                rounds = doc["step_rounds"][bi]["seconds_per_step_by_round_and_worker"]
                busiest = [max(workers) for workers in rounds]
                stats["S12"].append(statistics.median(busiest[:12]))
                stats["S48"].append(statistics.median(busiest))
                stats["Q25"].append(quantile(busiest, 0.25))
                stats["MEANW"].append(statistics.median([sum(w) / len(w) for w in rounds]))
                blocks.append([statistics.median(busiest[k:k + 12]) for k in range(0, 48, 12)])
            within = statistics.median(spread(b) for b in blocks)
            halves = [stats["S12"][:4], stats["S12"][4:8]]
            between = statistics.median(spread(h) for h in halves if len(h) >= 2)
            pairs = [(stats["S12"][k] + stats["S12"][k + 1]) / 2
                     for k in range(0, len(docs) - 1, 2)]
            print(f"{row},{entry['batch']},{len(docs)},"
                  + ",".join(f"{spread(stats[s]):.1f}" for s in ("S12", "S48", "Q25", "MEANW"))
                  + f",{within:.1f},{between:.1f},{spread(pairs):.1f},"
                  f"{1e3 * statistics.median(stats['S12']):.3f},"
                  f"{1e3 * statistics.median(stats['S48']):.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: analyse.py DIR")
    main(sys.argv[1])
