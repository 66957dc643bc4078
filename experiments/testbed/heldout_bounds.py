#!/usr/bin/env python3
"""heldout_bounds.py DIR [--parts A,B,..] [--ttt-parts A,..] [--at-most-workers K]: a held-out matrix's
bounds over the rows of its runs (DIR/fashion and DIR/wide by default, or DIR/PART for each of
--parts; each a `validate --testbed` output; time to target over the rows of --ttt-parts, by default
all of them), as heldout2-matrix.yaml and
heldout3-matrix.yaml fix them (issue 27's): simgrid CM02's median and largest |round error| over all rows, its median |time-to-target
error| leaving the group out (rows that have one), and on the baseline's contended rows its
median |round error| against the bottleneck baseline's. Prints a row table and the bounds; with
--at-most-workers K also CM02's median and largest |round error| over the rows of at most K
workers, against 5% and 15% (heldout4-matrix.yaml's own bound)."""
import argparse
import re
import json
import statistics
import sys
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("dir")
parser.add_argument("--parts", default="fashion,wide")
parser.add_argument("--ttt-parts", default=None)
parser.add_argument("--at-most-workers", type=int, default=None)
args = parser.parse_args()
parts = args.parts.split(",")
ttt_parts = parts if args.ttt_parts is None else args.ttt_parts.split(",")

rows = []
for part in parts:
    path = Path(args.dir) / part / "testbed-validation.json"
    if not path.is_file():
        print(f"heldout_bounds.py: {path}: expected a validate --testbed output (--parts {part})",
              file=sys.stderr)
        sys.exit(2)
    doc = json.loads(path.read_text())
    for r in doc["results"]:
        r["_part"] = part
    rows += doc["results"]

print("config | baseline contended | CM02 round | baseline round | CM02 TTT LGO")
for r in rows:
    cm = r["engines"]["simgrid_cm02"]
    lgo = cm.get("error_time_to_target_group_out")
    print(f'{r["config"]} | {"yes" if r["baseline"]["contended"] else "no"} | '
          f'{100 * cm["error_round"]:+.1f}% | {100 * r["baseline"]["error_round"]:+.1f}% | '
          + ("n/a" if lgo is None else f"{100 * lgo:+.1f}%"))

cm02 = [abs(r["engines"]["simgrid_cm02"]["error_round"]) for r in rows]
lgo = [abs(r["engines"]["simgrid_cm02"]["error_time_to_target_group_out"]) for r in rows
       if r["_part"] in ttt_parts
       and r["engines"]["simgrid_cm02"].get("error_time_to_target_group_out") is not None]
contended = [r for r in rows if r["baseline"]["contended"]]
cm02_c = statistics.median(abs(r["engines"]["simgrid_cm02"]["error_round"]) for r in contended)
base_c = statistics.median(abs(r["baseline"]["error_round"]) for r in contended)
median, largest = statistics.median(cm02), max(cm02)


def verdict(value, target, resolve):
    return "met" if value <= target else ("resolve bound met" if value <= resolve else "not met")


print(f"rows {len(rows)}, contended (baseline's count) {len(contended)}, with a LGO time {len(lgo)}")
print(f"CM02 median |round error| {100 * median:.1f}% (target 3%, resolve 5%): "
      + verdict(median, 0.03, 0.05))
print(f"CM02 largest |round error| {100 * largest:.1f}% (target 10%, resolve 15%): "
      + verdict(largest, 0.10, 0.15))
print(f"CM02 median |time to target error| leave-group-out {100 * statistics.median(lgo):.1f}% "
      f"(<= 15%): " + ("met" if statistics.median(lgo) <= 0.15 else "not met"))
print(f"contended rows: CM02 median {100 * cm02_c:.1f}%, baseline {100 * base_c:.1f}%, "
      f"CM02 beats it by {base_c / cm02_c:.2f}x (>= 2): " + ("met" if base_c >= 2 * cm02_c else "not met"))

if args.at_most_workers is not None:
    k = args.at_most_workers
    small = [abs(r["engines"]["simgrid_cm02"]["error_round"]) for r in rows
             if int(re.search(r"K=(\d+)", r["config"]).group(1)) <= k]
    print(f"rows of at most {k} workers: {len(small)}; CM02 median |round error| "
          f"{100 * statistics.median(small):.1f}% (<= 5%): "
          + ("met" if statistics.median(small) <= 0.05 else "not met")
          + f", largest {100 * max(small):.1f}% (<= 15%): " + ("met" if max(small) <= 0.15 else "not met"))
