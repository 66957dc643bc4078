#!/usr/bin/env python3
"""calibrations_spread.py: how far network calibrations of one testbed, taken at different times,
are from each other, by the numbers each one wrote (no refit). Reads `tauplan testbed calibrate
--mpi --json` outputs (FILE.json) and validate's testbed-validation.json (each group's networks[]),
groups them by group name (or "calibrate" for the former), and prints per group:
  - each calibration's MPI latency factor c and its steal;
  - per route (routes[]: src > dst), the spread (largest / smallest - 1) over the calibrations of
    its rate (routes[].bandwidth_Bps) and of what a message above the eager limit pays on top of
    its bytes, 3 c l, with l half the route's recorded TCP round trip (tcp_routes[].round_trip_s:
    what the latency of every link on it is scaled from; the median echo in calibrations before
    2026-12-02, the fastest since); the median and the largest over routes (those in every
    calibration of the group);
  - per link of the written platform (links[]), the spread of its bandwidth and latency.
Standard library only.
Usage: python3 experiments/testbed/calibrations_spread.py FILE_OR_DIR...
"""
import json
import os
import statistics
import sys


def networks_of(path):
    if os.path.isdir(path):
        path = os.path.join(path, "testbed-validation.json")
    doc = json.load(open(path))
    if "networks" in doc:
        return [(n["group"], path, n) for n in doc["networks"]]
    return [("calibrate", path, doc)]


def spread(values):
    return max(values) / min(values) - 1


def describe(label, table):
    """table: name -> list of values, one per calibration."""
    spreads = {name: spread(v) for name, v in table.items() if min(v) > 0}
    if not spreads:
        print("    %s: nothing to compare" % label)
        return
    worst = max(spreads, key=spreads.get)
    print("    %s: median %.2f%%, largest %.2f%% (%s)" %
          (label, 100 * statistics.median(spreads.values()), 100 * spreads[worst], worst))


def main(paths):
    groups = {}
    for p in paths:
        for group, path, network in networks_of(p):
            groups.setdefault(group, []).append((path, network))
    for group, runs in sorted(groups.items()):
        print("group %s: %d calibrations" % (group, len(runs)))
        rate, message, link_bw, link_lat = {}, {}, {}, {}
        for path, n in runs:
            c = n.get("mpi_latency_factor")
            if not c:
                sys.exit("%s: not an MPI calibration (no mpi_latency_factor)" % path)
            steal = n.get("cpu_steal_fraction")
            print("  %s: factor %.4f, steal %s" %
                  (path, c, "%.1f%%" % (100 * steal) if steal is not None else "unknown"))
            tcp = n.get("tcp_routes") or n["routes"]
            for m, t in zip(n["routes"], tcp):
                name = m["src"] + ">" + m["dst"]
                rate.setdefault(name, []).append(m["bandwidth_Bps"])
                message.setdefault(name, []).append(3 * c * t["round_trip_s"] / 2)
            for link in n["links"]:
                link_bw.setdefault(link["name"], []).append(link["bandwidth_Bps"])
                link_lat.setdefault(link["name"], []).append(link["latency_s"])
        for table in (rate, message, link_bw, link_lat):
            for name in [k for k, v in table.items() if len(v) != len(runs)]:
                del table[name]
        describe("route rate spread", rate)
        describe("route message latency 3 c l spread", message)
        describe("link bandwidth spread", link_bw)
        describe("link latency spread", link_lat)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
