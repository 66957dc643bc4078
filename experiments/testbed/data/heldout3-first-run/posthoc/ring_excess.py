#!/usr/bin/env python3
"""ring_excess.py DATA_DIR...: post hoc, after the third held-out run (not part of its protocol).

For every uncontended ring row (sync or local SGD on a ring, the bottleneck baseline's
"not contended") of the given held-out runs, how far the measured communication of a round
exceeds SimGrid CM02's, per ring step (2 (K - 1) steps a round), beside the ring's hops: their
mean one-way latency and the message size. The latencies are the calibrated ones, summed over
each hop's route in the row's own platform file (platforms/NN.xml, Full routing), in the order
validate lists the row's hosts (rank i sends to rank i + 1). Reads the files only; standard
library only. Leaves out: hierarchical rows (two rings and a broadcast), contended rows, and
anything the row's JSON does not say.
"""
import csv
import re
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

PARAMETERS = {"fashion": 235146, "wide": 1333770}  # fashion-mlp.yaml, fashion-mlp-wide.yaml
BYTES_PER_PARAMETER = 4  # float32 gradients
EAGER_LIMIT = 65536  # OpenMPI ob1 over TCP, as the calibrated platforms say (eager_limit_bytes)


def route_latencies(platform: Path):
    root = ET.parse(platform).getroot()
    latency = {}
    for link in root.iter("link"):
        value = link.get("latency", "0s")
        match = re.fullmatch(r"([0-9.eE+-]+)(s|ms|us)", value)
        if not match:
            sys.exit(f"{platform}: link {link.get('id')}: latency {value!r} is not seconds")
        scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[match.group(2)]
        latency[link.get("id")] = float(match.group(1)) * scale
    routes = {}
    for route in root.iter("route"):
        routes[(route.get("src"), route.get("dst"))] = sum(
            latency[ctn.get("id")] for ctn in route.iter("link_ctn"))
    return routes


def rows_of(run_dir: Path):
    text = run_dir.with_suffix(".txt")
    hosts = [line.split(" on ", 1)[1].strip().split(",")
             for line in text.read_text().splitlines()
             if re.match(r"validate: \[\d+/\d+\] ", line)]
    names = [re.match(r"validate: \[\d+/\d+\] (.*) on ", line).group(1)
             for line in text.read_text().splitlines()
             if re.match(r"validate: \[\d+/\d+\] ", line)]
    with open(run_dir / "testbed-validation.csv") as f:
        rows = list(csv.DictReader(f))
    for index, row in enumerate(rows):
        if index >= len(names) or names[index] != row["config"]:
            continue  # a copy row (two jobs) has no line of its own
        yield index, row, hosts[index]


def main(dirs):
    print("row | config | K | message KB | eager | mean hop one-way ms | "
          "comm measured ms | CM02 ms | excess per step ms | excess / mean hop")
    ratios = []
    for data in dirs:
        for model in ("fashion", "wide"):
            run_dir = Path(data) / model
            if not (run_dir / "testbed-validation.csv").exists():
                continue
            for index, row, hosts in rows_of(run_dir):
                if row["collective"] != "ring" or row["baseline_contended"] != "0":
                    continue
                routes = route_latencies(run_dir / "platforms" / f"{index:02d}.xml")
                k = int(row["workers"])
                hops = [routes[(hosts[i], hosts[(i + 1) % k])] for i in range(k)]
                mean_hop = statistics.mean(hops)
                message = PARAMETERS[model] * BYTES_PER_PARAMETER / k
                steps = 2 * (k - 1)
                measured = float(row["comm_measured_s"])
                cm02 = float(row["comm_simgrid_cm02_s"])
                excess = (measured - cm02) / steps
                ratios.append(excess / mean_hop)
                print(f"{Path(data).name}/{model} {index:02d} | {row['config']} | {k} | "
                      f"{message / 1e3:.1f} | {'yes' if message <= EAGER_LIMIT else 'no'} | "
                      f"{mean_hop * 1e3:.2f} | {measured * 1e3:.1f} | {cm02 * 1e3:.1f} | "
                      f"{excess * 1e3:.2f} | {excess / mean_hop:.2f}")
    if ratios:
        print(f"excess per step over the mean hop's one-way latency: median "
              f"{statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}, "
              f"{len(ratios)} rows")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: ring_excess.py DATA_DIR...")
    main(sys.argv[1:])
