#!/usr/bin/env python3
"""ab_summary.py: the reading of an ab_runs.sh folder: per shape, each binary's median |round
error| (+terms) in every round, its range over the rounds, the rounds' paired differences (B - A,
points), and each row's measured round (B over A, the median of the rounds' ratios). The rule
written in README.md before the runs: B reproduces A's figure on a shape when |median B - median
A| <= max A - min A over the rounds; beside it the stricter reading, B's median within A's range.

Usage: python3 experiments/transformer/ab_summary.py OUT_DIR
"""
import csv
import statistics
import sys
from pathlib import Path

SHAPES = ["heldout2", "small", "wide", "heldout"]


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def round_errors(rows):
    """Each row's round error (+terms) in percent: (predicted - measured) / measured."""
    return {
        row["config"]: 100.0 * (float(row["round_terms_s"]) - float(row["round_measured_s"]))
        / float(row["round_measured_s"])
        for row in rows
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python3 experiments/transformer/ab_summary.py OUT_DIR")
    out = Path(sys.argv[1])
    rounds = sorted({int(p.name.split("-")[1]) for p in out.glob("A-*") if p.is_dir()})
    if not rounds:
        sys.exit(f"ab_summary.py: {out}: expected folders A-1, B-1, ... from ab_runs.sh")
    verdicts = []
    for shape in SHAPES:
        figures = {"A": [], "B": []}
        measured = {"A": [], "B": []}
        for label in figures:
            for r in rounds:
                rows = read_rows(out / f"{label}-{r}" / f"validate-{shape}.csv")
                errors = round_errors(rows)
                figures[label].append(statistics.median(abs(e) for e in errors.values()))
                measured[label].append({row["config"]: float(row["round_measured_s"]) for row in rows})
        a, b = figures["A"], figures["B"]
        b_median = statistics.median(b)
        a_median = statistics.median(a)
        holds = abs(b_median - a_median) <= max(a) - min(a)
        within_range = min(a) <= b_median <= max(a)
        verdicts.append(holds)
        print(f"block-{shape}: median |round error| (+terms), rounds {rounds[0]}-{rounds[-1]}")
        print("  A  " + "  ".join(f"{x:5.1f}%" for x in a) + f"   median {a_median:.1f}%, range {min(a):.1f}-{max(a):.1f}%")
        print("  B  " + "  ".join(f"{x:5.1f}%" for x in b) + f"   median {b_median:.1f}%")
        diffs = [y - x for x, y in zip(a, b)]
        print("  B - A (points)  " + "  ".join(f"{d:+5.1f}" for d in diffs)
              + f"   median {statistics.median(diffs):+.1f}")
        configs = list(measured["A"][0])
        ratios = {c: statistics.median(mb[c] / ma[c] for ma, mb in zip(measured["A"], measured["B"]))
                  for c in configs}
        print("  measured round B / A (median over rounds): "
              + ", ".join(f"{c} {ratios[c]:.3f}" for c in configs))
        print(f"  reading: |median B - median A| {abs(b_median - a_median):.1f} against A's spread "
              f"{max(a) - min(a):.1f} points: {'reproduced' if holds else 'NOT reproduced'}; "
              f"stricter, B's median {'within' if within_range else 'outside'} A's range")
    print(f"{sum(verdicts)} of {len(verdicts)} shapes reproduced")


if __name__ == "__main__":
    main()
