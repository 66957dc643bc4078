#!/usr/bin/env python3
"""message_readings.py: how much each route's calibrated numbers move between recorded network
calibrations of one testbed group, under two rules for `testbed calibrate --mpi`
(study/testbed/testbed_control.cpp, exec/testbed/netcal.hpp):

  old (to 73f6f59): bandwidth = the TCP transfers' fit; alpha = median over all messages of
      t - S / bandwidth; a route's one-way latency = half the median of its TCP echoes;
  new (since): bandwidth = the messages' own lower envelope; alpha = the least t - S /
      bandwidth of the smallest messages; one-way latency = half the fastest TCP echo. (The
      calibrations recorded before this rule have no 8 MiB messages and time a size's repeats
      one after another; the new probe adds both, so this rule on old samples reads the rates
      less well than the new calibration does; their messages' one-way times are the exchange
      less half the median small round trip, the fastest since.)

Under both, every link's latency is its TCP fit times one factor c per group (the least-squares
fit through the origin of alpha against 3 one-way latencies, over the measured routes); what a
message above the eager limit then pays on route r is 3 c l(r) + S / bandwidth(r). This script
prints, per group and route, the spread (largest / smallest - 1) over the given calibrations of
the route's bandwidth and of 3 c l(r), under each rule, and the factor c of each calibration.
It recomputes both rules from the recorded samples (networks[].routes[].transfers: the
messages; networks[].tcp_routes[]: the TCP fit and echoes); a rule's own envelope over the
messages is model::fit_lower_envelope's (the hull edge spanning the mean size). Replays are
left out (they repeat a run's calibration). Standard library only.
Usage: python3 experiments/testbed/message_readings.py DIR...   (each DIR/testbed-validation.json)
"""
import json
import os
import statistics
import sys


def lower_envelope_slope(points):
    """The slope of the lower hull edge that spans the mean x (as model::fit_lower_envelope)."""
    xs = [p[0] for p in points]
    mean_x = sum(xs) / len(xs)
    lowest = {}
    for x, y in points:
        lowest[x] = min(y, lowest.get(x, y))
    hull = []
    for p in sorted(lowest.items()):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
            if cross > 0:
                break
            hull.pop()
        hull.append(p)
    if len(hull) < 2:
        return 0.0
    edge = 0
    while edge + 2 < len(hull) and hull[edge + 1][0] < mean_x:
        edge += 1
    slope = (hull[edge + 1][1] - hull[edge][1]) / (hull[edge + 1][0] - hull[edge][0])
    if hull[edge + 1][0] == mean_x and edge + 2 < len(hull):
        nxt = (hull[edge + 2][1] - hull[edge + 1][1]) / (hull[edge + 2][0] - hull[edge + 1][0])
        slope = 0.5 * (slope + nxt)
    return slope


def route_numbers(message_route, tcp_route, rule):
    samples = [(s["bytes"], s["seconds"]) for s in message_route["transfers"]]
    echoes = tcp_route["round_trips_s"]
    if rule == "old":
        bandwidth = tcp_route["bandwidth_Bps"]
        alpha = statistics.median(t - b / bandwidth for b, t in samples)
        one_way = statistics.median(echoes) / 2
    else:
        slope = lower_envelope_slope(samples)
        bandwidth = 1 / slope if slope > 0 else float("nan")
        smallest = min(b for b, _ in samples)
        alpha = min(t - b / bandwidth for b, t in samples if b == smallest)
        one_way = min(echoes) / 2
    return bandwidth, alpha, one_way


def group_readings(network, rule):
    routes = []
    for m, t in zip(network["routes"], network["tcp_routes"]):
        routes.append((m["src"] + ">" + m["dst"],) + route_numbers(m, t, rule))
    # c through the origin: alpha against 3 one-way latencies.
    factor = sum(a * 3 * l for _, _, a, l in routes) / sum((3 * l) ** 2 for _, _, a, l in routes)
    return factor, {name: (bw, 3 * factor * l) for name, bw, _, l in routes}


def spread(values):
    return max(values) / min(values) - 1


def main(dirs):
    by_group = {}
    for d in dirs:
        path = d.rstrip("/") + "/testbed-validation.json"
        if "replay" in d or not os.path.exists(path):
            continue
        doc = json.load(open(path))
        for network in doc.get("networks", []):
            if not network.get("tcp_routes"):
                continue
            by_group.setdefault(network["group"], []).append((d, network))
    for group, runs in sorted(by_group.items()):
        print("group %s: %d calibrations" % (group, len(runs)))
        for rule in ("old", "new"):
            readings = [group_readings(n, rule) for _, n in runs]
            factors = " ".join("%.3f" % f for f, _ in readings)
            print("  %s rule: factor c per calibration: %s" % (rule, factors))
            names = sorted(set.intersection(*(set(r[1]) for r in readings)))
            bw = [spread([r[1][name][0] for r in readings]) for name in names]
            lat = [spread([r[1][name][1] for r in readings]) for name in names]
            print("    route bandwidth spread: median %.1f%%, largest %.1f%% (%s)" %
                  (100 * statistics.median(bw), 100 * max(bw), names[bw.index(max(bw))]))
            print("    route message latency 3 c l spread: median %.1f%%, largest %.1f%% (%s)" %
                  (100 * statistics.median(lat), 100 * max(lat), names[lat.index(max(lat))]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
