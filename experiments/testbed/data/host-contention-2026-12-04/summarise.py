#!/usr/bin/env python3
"""summarise.py: run.sh's runs against the decision rule written before them
(experiments/testbed/README.md, "The host's share"), and each run's share of the fabric's
lateness counters (cumulative in fabric-after-NAME.txt; a loaded run's share holds both rings'
packets). Usage: summarise.py [DIR] > summary.txt"""
import os
import re
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "ring-gap-diagnosis"))
import steps  # noqa: E402

ORDER = [f"ring4-{size}-{load}-{rep}" for size in ("eager", "rdv") for rep in (1, 2)
         for load in ("alone", "loaded")]


def mean_excess(path, name):
    rounds = steps.read(path)
    hosts, chunk = steps.HOSTS[name], steps.CHUNK[name]
    cells, measured = [], []
    for rnd, ranks in sorted(rounds.items()):
        if rnd == 0 or len(ranks) != len(hosts):
            continue
        for s in range(len(ranks[0])):
            leave = steps.predicted_leave(ranks, hosts, s, chunk, forwarding=True)
            cells.extend(ranks[r][s][1] - leave[r] for r in range(len(hosts)))
        measured.append(max(ranks[r][-1][1] for r in ranks))
    return statistics.fmean(cells), statistics.median(cells), statistics.median(measured)


def fabric(path):
    text = open(path).read()
    got = dict(re.findall(r"(early|0-10us|10-25us|25-50us|50-100us|100-250us|250us-1ms|over 1ms) (\d+)",
                          text))
    return {k: int(v) for k, v in got.items()}


def main(folder):
    prev = {}
    means = {}
    print("run                     mean/median excess a step, ms   round ms | fabric: packets, "
          ">250us, >1ms (this run's share)")
    for name in ORDER:
        key = name.rsplit("-", 1)[0]
        mean, med, rnd = mean_excess(os.path.join(folder, f"steps-{name}.txt.gz"), key)
        means.setdefault(key, []).append(mean)
        now = fabric(os.path.join(folder, f"fabric-after-{name}.txt"))
        d = {k: now[k] - prev.get(k, 0) for k in now}
        prev = now
        total = sum(d.values())
        late = d["250us-1ms"] + d["over 1ms"]
        print(f"{name:<24} {1e3 * mean:6.2f} / {1e3 * med:5.2f}              {1e3 * rnd:7.1f} | "
              f"{total:7d}, {100 * late / total:.2f}%, {100 * d['over 1ms'] / total:.3f}%")
    for size in ("eager", "rdv"):
        alone, loaded = means[f"ring4-{size}-alone"], means[f"ring4-{size}-loaded"]
        if min(loaded) >= 2 * max(alone):
            verdict = "the host's"
        elif all(abs(v / statistics.fmean(alone) - 1) <= 0.25 for v in loaded):
            verdict = "the network's"
        else:
            verdict = "mixed"
        print(f"{size}: alone {', '.join(f'{1e3 * v:.2f}' for v in alone)} ms, beside the ring of "
              f"10 {', '.join(f'{1e3 * v:.2f}' for v in loaded)} ms: {min(loaded) / max(alone):.2f}x "
              f"the larger alone -> {verdict}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else here)
