#!/usr/bin/env python3
"""group_means.py DIR ROW BATCH N [N ...]: experiments/testbed/README.md, "The mean of several
launches". Reads DIR/ROW-launch-K.json (K = 1, 2, ...; `tauplan testbed compute-probe` output with
`step_rounds`), takes per launch S12 at BATCH (the median over its rounds of the busiest worker's
seconds per step: validate's statistic), splits the launches in order into consecutive groups of
N (a last, shorter group is left out), and prints per N the groups' means and their spread
(largest / smallest - 1, %)."""
import glob
import json
import os
import re
import statistics
import sys


def main(folder, row, batch, sizes):
    found = {}
    for path in glob.glob(os.path.join(folder, f"{row}-launch-*.json")):
        k = int(re.search(r"-launch-(\d+)\.json$", path).group(1))
        doc = json.load(open(path))
        entry = next(e for e in doc["step_rounds"] if e["batch"] == batch)
        rounds = entry["seconds_per_step_by_round_and_worker"]
        found[k] = statistics.median(max(workers) for workers in rounds)
    s12 = [found[k] for k in sorted(found)]
    print(f"{row} batch {batch}: {len(s12)} launches, S12 (ms) "
          + " ".join(f"{1e3 * v:.3f}" for v in s12))
    for n in sizes:
        means = [statistics.mean(s12[i:i + n]) for i in range(0, len(s12) - n + 1, n)]
        spread = 100.0 * (max(means) / min(means) - 1.0) if len(means) >= 2 else float("nan")
        print(f"  N={n}: {len(means)} groups, means (ms) "
              + " ".join(f"{1e3 * m:.3f}" for m in means) + f", spread {spread:.1f}%")


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit("usage: group_means.py DIR ROW BATCH N [N ...]")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(n) for n in sys.argv[4:]])
