#!/usr/bin/env python3
"""summarise_runs.py: study 4's validation runs side by side.

    python3 experiments/async/summarise_runs.py LABEL=DIR [LABEL=DIR ...]

Each DIR is the --out folder of one `tauplan validate experiments/async/validate.yaml ...` run
(its validation.json). Prints, per run and strategy, the median |error| of the analytic
engine's round time, of the rounds to target left one out, and of the analytic engine's time to
target left one out (the README's table), then, per configuration, the measured round (ms) of
every run and its analytic error. Reads both schemas of validation.json: before 2026-11-30 (a
row's round_s and time_to_target_s hold measured and error_analytic) and after (measured.round_s,
engines.analytic.error_round, error_time_to_target_loo). Reads only the runs' own files;
computes nothing but medians.
"""
import json
import statistics
import sys


def rows(path):
    with open(path + "/validation.json") as f:
        data = json.load(f)
    out = {}
    for row in data["results"]:
        if "engines" in row:
            measured = row["measured"]["round_s"]
            error = row["engines"]["analytic"]["error_round"]
            target = row["engines"]["analytic"]["error_time_to_target_loo"]
        else:
            measured = row["round_s"]["measured"]
            error = row["round_s"]["error_analytic"]
            target = row["time_to_target_s"]["error_analytic"]
        rounds = row["rounds"]["error_leave_one_out"]
        key = row["config"]
        if row.get("slow_worker", 1.0) != 1.0 and "slow" not in key:
            key += " slow=%g" % row["slow_worker"]
        out[key] = (row["strategy"], measured, error, rounds, target)
    return out


def main(args):
    if not args:
        sys.exit("usage: summarise_runs.py LABEL=DIR [LABEL=DIR ...]")
    runs = []
    for arg in args:
        label, _, path = arg.partition("=")
        if not path:
            sys.exit("summarise_runs.py: expected LABEL=DIR, got " + arg)
        runs.append((label, rows(path)))
    strategies = sorted({row[0] for _, r in runs for row in r.values()})
    for title, column in (("round time", 2), ("rounds (LOO)", 3), ("time to target (LOO)", 4)):
        print("median |error| of the analytic engine's %s, per strategy" % title)
        print("%-12s" % "run" + "".join("%12s" % s for s in strategies))
        for label, r in runs:
            cells = []
            for s in strategies:
                errors = [abs(row[column]) for row in r.values()
                          if row[0] == s and row[column] is not None]
                cells.append("%11.1f%%" % (100 * statistics.median(errors)) if errors
                             else "%12s" % "-")
            print("%-12s" % label + "".join(cells))
        print()
    print("measured round ms (analytic error) per configuration")
    configs = sorted({c for _, r in runs for c in r})
    print("%-32s" % "configuration" + "".join("%20s" % label for label, _ in runs))
    for c in configs:
        cells = []
        for _, r in runs:
            if c in r:
                _, measured, error = r[c][:3]
                said = "%+5.1f%%" % (100 * error) if error is not None else "  n/a"
                cells.append("%11.3f (%s)" % (1e3 * measured, said))
            else:
                cells.append("%20s" % "-")
        print("%-32s" % c + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
