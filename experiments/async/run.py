#!/usr/bin/env python3
"""run.py: the three studies of README.md (issue 12), end to end.

    experiments/async/run.py [TAUPLAN] [OUT]

TAUPLAN defaults to build/cli/tauplan, OUT to experiments/async/figures. Every number comes from
`tauplan predict` (analytic) and `tauplan simulate` (SimGrid, CM02) on
platforms/cloud-k80-p100-v100.xml; this script only runs them, gathers their JSON rows into CSV
files and draws them with gnuplot (PNG and SVG). Jobs are built from flags (every job key is a
flag); the exact command of each row is in the CSV's `command` column.
"""
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TAUPLAN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "cli", "tauplan")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "figures")
os.makedirs(OUT, exist_ok=True)

PLATFORM = "cloud-k80-p100-v100"
# ResNet-50's illustrative critical-batch fit of experiments/planning (Smin 12000, Bcrit 8192,
# drift 0.1): the same target the planning studies use.
CONVERGENCE = ["--convergence", "critical-batch", "--min-steps", "12000", "--critical-batch",
               "8192", "--drift", "0.1"]
COMMON = ["--platform", PLATFORM, "--workload", "resnet-50"] + CONVERGENCE
B32 = ["--batch", "32"]  # per worker (single, local-sgd, async-ps)


def hosts(kind, count, first=0):
    return ",".join(f"{kind}-{i}-gpu0" for i in range(first, first + count))


def run(verb, args):
    command = [TAUPLAN, verb] + args + ["--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
    rows = json.loads(done.stdout)["results"]
    shown = " ".join(["tauplan", verb] + [a if "," not in a else f"'{a}'" for a in args])
    return rows, shown


def write_csv(name, header, rows):
    with open(os.path.join(OUT, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def gnuplot(name, body, size="900,540"):
    script = (f"# {name}.gp: written by experiments/async/run.py; draws {name}.png and "
              f"{name}.svg from the CSV beside it.\nset datafile separator ','\n"
              f"set terminal pngcairo size {size} font 'Sans,10'\nset output '{name}.png'\n"
              f"{body}\nset terminal svg size {size} font 'Sans,10'\nset output '{name}.svg'\n"
              "replot\nunset output\n")
    path = os.path.join(OUT, name + ".gp")
    with open(path, "w") as f:
        f.write(script)
    subprocess.run(["gnuplot", name + ".gp"], cwd=OUT, check=True)


# --- Study 1: how many workers of each GPU type one parameter server feeds ------------------
saturation = []
for kind in ["k80", "p100", "v100"]:
    for k in range(1, 9):
        args = COMMON + B32 + ["--strategies", "async-ps", "--workers", str(k), "--hosts",
                         hosts(kind, k), "--servers", "1"]
        (a,), shown = run("predict", args)
        (s,), _ = run("simulate", args + ["--sim-rounds", "400"])
        saturation.append([kind, k, a["updates_per_s"], s["updates_per_s"],
                           32 * a["updates_per_s"], 32 * s["updates_per_s"], a["bottleneck"],
                           a["staleness_mean"], s["staleness_mean"],
                           s["servers_detail"][0]["receive_busy"],
                           s["servers_detail"][0]["apply_busy"], shown])
write_csv("saturation.csv",
          ["gpu", "workers", "updates_per_s_analytic", "updates_per_s_simgrid",
           "images_per_s_analytic", "images_per_s_simgrid", "bottleneck", "staleness_analytic",
           "staleness_simgrid", "server_receive_busy_simgrid", "server_apply_busy_simgrid",
           "command"], saturation)
# The saturation point: the first K at which the analytic bottleneck is the server.
points = []
for kind in ["k80", "p100", "v100"]:
    rows = [r for r in saturation if r[0] == kind]
    first = next((r for r in rows if r[6] != "workers"), None)
    alone = rows[0][2]  # one worker's updates per second
    server = max(r[2] for r in rows)
    points.append([kind, alone, server, server / alone, first[1] if first else "",
                   first[6] if first else "workers"])
write_csv("saturation_points.csv",
          ["gpu", "updates_per_s_one_worker", "updates_per_s_saturated", "workers_to_saturate",
           "first_saturated_K", "bottleneck"], points)
gnuplot("saturation", """set key autotitle columnhead
set title 'async-ps, ResNet-50 b=32, one parameter server (ps0, 8 Gb/s) on cloud-k80-p100-v100'
set xlabel 'workers K (all of one GPU type)'
set ylabel 'throughput (images/s)'
set xrange [0.5:8.5]
set yrange [0:*]
set grid
set key top left
plot 'saturation.csv' every ::0::7 using 2:5 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'K80 analytic', \\
  '' every ::0::7 using 2:6 with points pt 6 ps 1.8 lc rgb '#1f77b4' title 'K80 simgrid', \\
  '' every ::8::15 using 2:5 with linespoints lw 2 pt 5 lc rgb '#ff7f0e' title 'P100 analytic', \\
  '' every ::8::15 using 2:6 with points pt 4 ps 1.8 lc rgb '#ff7f0e' title 'P100 simgrid', \\
  '' every ::16::23 using 2:5 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'V100 analytic', \\
  '' every ::16::23 using 2:6 with points pt 8 ps 1.8 lc rgb '#2ca02c' title 'V100 simgrid'""")

# --- Study 2: async against sync against local SGD, time to accuracy, heterogeneous ---------
mixed = hosts("k80", 2) + "," + hosts("p100", 2) + "," + hosts("v100", 2)
configs = [
    ("sync ring, speed split", ["--strategies", "sync", "--collective", "ring", "--split", "speed",
                                "--batch", "192"]),
    ("sync ps, speed split", ["--strategies", "sync", "--collective", "ps", "--servers", "1",
                              "--split", "speed", "--batch", "192"]),
    ("local-sgd ring, tau 8", B32 + ["--strategies", "local-sgd", "--collective", "ring",
                                     "--tau", "8"]),
    ("local-sgd ring, budget 0.8 s", B32 + ["--strategies", "local-sgd", "--collective", "ring",
                                            "--round-budget-s", "0.8"]),
    ("async-ps, 1 server", B32 + ["--strategies", "async-ps", "--servers", "1"]),
    ("async-ps, 2 servers", B32 + ["--strategies", "async-ps", "--servers", "2"]),
    ("async-ps, 2 servers, s=2", B32 + ["--strategies", "async-ps", "--servers", "2",
                                        "--staleness-bound", "2"]),
]
compare = []
for kappa in ["1", "0.25", "0"]:
    for label, extra in configs:
        args = COMMON + ["--workers", "6", "--hosts", mixed, "--staleness-cost", kappa] + extra
        (a,), shown = run("predict", args)
        (s,), _ = run("simulate", args + ["--sim-rounds", "400" if "async" in label else "20"])
        compare.append([kappa, label, a["round_s"], s["round_s"], a["rounds"],
                        a["total_s"] / 3600, s["total_s"] / 3600,
                        a.get("bottleneck", ""), a.get("staleness_mean", ""),
                        s.get("staleness_mean", ""), shown])
write_csv("time_to_accuracy.csv",
          ["kappa", "configuration", "round_s_analytic", "round_s_simgrid", "rounds",
           "hours_analytic", "hours_simgrid", "bottleneck", "staleness_analytic",
           "staleness_simgrid", "command"], compare)
gnuplot("time_to_accuracy", """set key autotitle columnhead
set title 'Time to the ResNet-50 target, 2 K80 + 2 P100 + 2 V100 (cloud-k80-p100-v100, simgrid)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel 'hours to target'
set xtics rotate by -30 scale 0
set yrange [0:*]
set grid ytics
set key top left
plot 'time_to_accuracy.csv' every ::0::6 using 7:xtic(2) title 'kappa = 1 (noiseless worst case)' lc rgb '#1f77b4', \\
  '' every ::7::13 using 7 title 'kappa = 0.25' lc rgb '#ff7f0e', \\
  '' every ::14::20 using 7 title 'kappa = 0 (staleness free)' lc rgb '#2ca02c'""", size="1000,600")

# --- Study 3: time budget against fixed tau with one slow worker ----------------------------
slow = hosts("v100", 3) + "," + hosts("k80", 1)
budget = []
v100_step = 32 * 24535105536 / 7.85e12  # C(b) of a V100 at b = 32 (catalog flop / speed)
for tau in [4, 8, 16, 32]:
    base = COMMON + B32 + ["--strategies", "local-sgd", "--collective", "ring", "--workers", "4",
                     "--hosts", slow]
    (fa,), fixed_cmd = run("predict", base + ["--tau", str(tau)])
    (fs,), _ = run("simulate", base + ["--tau", str(tau), "--sim-rounds", "20"])
    b_s = tau * v100_step
    (ba,), budget_cmd = run("predict", base + ["--round-budget-s", str(b_s)])
    (bs,), _ = run("simulate", base + ["--round-budget-s", str(b_s), "--sim-rounds", "20"])
    budget.append([tau, b_s, fa["round_s"], fs["round_s"], fa["rounds"], fa["total_s"] / 3600,
                   fs["total_s"] / 3600, ba["round_s"], bs["round_s"], ba["rounds"],
                   ba["total_s"] / 3600, bs["total_s"] / 3600,
                   " ".join(str(x) for x in ba["local_steps"]), fixed_cmd, budget_cmd])
write_csv("budget_vs_tau.csv",
          ["tau", "budget_s", "fixed_round_s_analytic", "fixed_round_s_simgrid", "fixed_rounds",
           "fixed_hours_analytic", "fixed_hours_simgrid", "budget_round_s_analytic",
           "budget_round_s_simgrid", "budget_rounds", "budget_hours_analytic",
           "budget_hours_simgrid", "budget_local_steps", "fixed_command", "budget_command"],
          budget)
gnuplot("budget_vs_tau", """set key autotitle columnhead
set title 'local SGD, 3 V100 + 1 K80 (one slow worker), ResNet-50 b=32: fixed tau against a time budget of tau V100 steps'
set xlabel 'tau (fixed), or budget = tau x C_{V100}(b)'
set ylabel 'hours to target'
set logscale x 2
set xtics (4,8,16,32)
set yrange [0:*]
set grid
set key top right
plot 'budget_vs_tau.csv' using 1:6 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'fixed tau, analytic', \\
  '' using 1:7 with points pt 6 ps 1.8 lc rgb '#1f77b4' title 'fixed tau, simgrid', \\
  '' using 1:11 with linespoints lw 2 pt 5 lc rgb '#d62728' title 'time budget, analytic', \\
  '' using 1:12 with points pt 4 ps 1.8 lc rgb '#d62728' title 'time budget, simgrid'""")
print("wrote", OUT)
