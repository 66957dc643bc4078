#!/usr/bin/env python3
"""route_rates.py: how far each recorded testbed calibration's TCP route rates fall from the rate
tc shapes the route to, by two estimators of the same recorded transfers: least squares through
each size's median of the repeats (the calibration before 99ca31e) and the lower envelope of all
repeats (model::fit_lower_envelope since; here by brute force over pairs of points). Reads every
DIR/**/testbed-validation.json given (replays left out; each group's networks[].tcp_routes, else
routes, with their transfers), prints one line per estimator (routes, median, 90th percentile and
largest |error|, routes within 0.5%) and, with --routes, the routes where either estimator is off
by more than 0.5%. Standard library only.
Usage: python3 experiments/testbed/route_rates.py [--routes] DIR..."""
import glob
import json
import statistics
import sys


def least_squares_slope(x, y):
    mx = sum(x) / len(x)
    my = sum(y) / len(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)


def envelope_slope(x, y):
    """The line under every point, highest at the mean x (brute force over pairs of points)."""
    mean_x = sum(x) / len(x)
    points = list(zip(x, y))
    best = None
    for x1, y1 in points:
        for x2, y2 in points:
            if not x1 <= mean_x <= x2 or x2 <= x1:
                continue
            slope = (y2 - y1) / (x2 - x1)
            if all(yy >= y1 + slope * (xx - x1) - 1e-12 for xx, yy in points):
                at_mean = y1 + slope * (mean_x - x1)
                if best is None or at_mean > best[0]:
                    best = (at_mean, slope)
    return best[1]


def main(argv):
    show_routes = "--routes" in argv
    dirs = [a for a in argv if a != "--routes"]
    if not dirs:
        sys.exit(__doc__.splitlines()[-1])
    rows = []
    runs = set()
    for d in dirs:
        for path in sorted(glob.glob(d + "/**/testbed-validation.json", recursive=True)):
            doc = json.load(open(path))
            if "replayed_from" in doc.get("context", {}):
                continue  # a replay carries its earlier run's networks again
            runs.add(path)
            for net in doc.get("networks", []):
                for r in net.get("tcp_routes") or net.get("routes"):
                    transfers = r.get("transfers")
                    if not transfers:
                        continue
                    by_size = {}
                    for t in transfers:
                        by_size.setdefault(t["bytes"], []).append(t["seconds"])
                    sizes = sorted(by_size)
                    medians = [statistics.median(by_size[s]) for s in sizes]
                    shaped = r["testbed_bandwidth_Bps"]
                    error = lambda slope: 100 * (1 / slope / shaped - 1)
                    rows.append((path.rsplit("/testbed-validation.json", 1)[0] + ":" + net["group"],
                                 "%s->%s" % (r["src"], r["dst"]),
                                 error(least_squares_slope(sizes, medians)),
                                 error(envelope_slope([t["bytes"] for t in transfers],
                                                      [t["seconds"] for t in transfers]))))
    print("%d runs (replays left out), %d routes measured" % (len(runs), len(rows)))
    for name, col in (("medians, least squares", 2), ("lower envelope", 3)):
        e = sorted(abs(r[col]) for r in rows)
        print("%-24s routes %d  median |error| %.3f%%  p90 %.3f%%  max %.3f%%  within 0.5%%: %d"
              % (name, len(e), statistics.median(e), e[int(0.9 * len(e))], e[-1],
                 sum(1 for v in e if v <= 0.5)))
    if show_routes:
        for r in rows:
            if max(abs(r[2]), abs(r[3])) > 0.5:
                print("%-60s %-16s medians %+.2f%%  envelope %+.2f%%" % r)


if __name__ == "__main__":
    main(sys.argv[1:])
