#!/usr/bin/env python3
"""spread_by_row.py RUN_DIR...: how far apart several validate runs of one matrix are, row by row.

Joins rows by their index in testbed-validation.json (runs_spread.sh then joined by configuration
name and dropped rows whose names repeat, as the held-out matrix's leaf-order and striped rings
do; it now joins them by occurrence and gives the same round spreads), and prints for each row the spread (largest / smallest - 1, in %) of the measured round and of
each engine's predicted round, communication (comm_s: the round less the workers' compute) and
one step's compute (compute_s), then per engine how many rows are within 1%.
"""
import json
import sys


def spread(values):
    """Largest / smallest - 1, in %; -1 when a value is missing or not positive (as runs_spread.sh)."""
    if any(v is None or v <= 0 for v in values):
        return -1.0
    return 100.0 * (max(values) / min(values) - 1.0)


def main(dirs):
    if len(dirs) < 2:
        sys.exit("usage: spread_by_row.py RUN_DIR RUN_DIR [RUN_DIR ...]")
    runs = [json.load(open(d + "/testbed-validation.json")) for d in dirs]
    rows = len(runs[0]["results"])
    if any(len(r["results"]) != rows for r in runs):
        sys.exit("spread_by_row.py: the runs have different numbers of rows")
    engines = ("simgrid_cm02", "analytic")
    within = {e: 0 for e in engines}
    print("row,config,measured_round_pct," + ",".join(
        f"{e}_round_pct,{e}_comm_pct,{e}_compute_pct" for e in engines))
    for k in range(rows):
        results = [r["results"][k] for r in runs]
        names = {x["config"] for x in results}
        if len(names) != 1:
            sys.exit(f"spread_by_row.py: row {k} differs between runs: {sorted(names)}")
        line = [f"{k:02}", '"' + results[0]["config"] + '"',
                f"{spread([x['measured']['round_s'] for x in results]):.2f}"]
        for e in engines:
            parts = [x["engines"][e] for x in results]
            round_spread = spread([p["round_s"] for p in parts])
            within[e] += 0 <= round_spread <= 1.0
            line += [f"{round_spread:.2f}", f"{spread([p['comm_s'] for p in parts]):.2f}",
                     f"{spread([p['compute_s'] for p in parts]):.2f}"]
        print(",".join(line))
    for e in engines:
        print(f"spread_by_row: {e} round within 1% on {within[e]} of {rows} rows over {len(runs)} runs",
              file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
