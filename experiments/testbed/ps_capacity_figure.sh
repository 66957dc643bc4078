#!/usr/bin/env bash
# ps_capacity_figure.sh: the throughput figure of the parameter-server capacity matrix
# (experiments/testbed/ps-capacity-matrix.yaml; README.md "Parameter servers of finite capacity").
# Reads DIR/testbed-validation.csv (written by `tauplan validate --testbed ps-capacity-matrix.yaml
# --out DIR`, or by `--replay`), writes DIR/throughput.csv (one line per row: strategy, servers,
# K, then samples/s measured, analytic, simgrid CM02, and each engine's error) and
# DIR/throughput.png/.svg: samples per second against K, measured as points and predicted as
# lines, for sync and async-ps with 1 and 2 servers. A sync row's throughput is K b / round (b =
# 64 per worker, the matrix's), an async row's b / (seconds per update). Usage:
#   bash experiments/testbed/ps_capacity_figure.sh DIR
set -euo pipefail
dir=${1:?usage: ps_capacity_figure.sh DIR}
csv="$dir/testbed-validation.csv"
[ -f "$csv" ] || { echo "ps_capacity_figure.sh: no $csv" >&2; exit 2; }
out="$dir/throughput.csv"
# Columns by name from the header (the CSV quotes only its first field).
awk -F, -v b=64 '
  NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  {
    n = split($0, f, ",")
    strategy = f[col["strategy"]]; k = f[col["workers"]]; s = f[col["servers"]]
    per = (strategy == "sync") ? k * b : b
    m = per / f[col["round_measured_s"]]
    a = per / f[col["round_analytic_s"]]
    c = per / f[col["round_simgrid_cm02_s"]]
    printf "%s,%s,%s,%.6g,%.6g,%.6g,%+.2f,%+.2f\n", strategy, s, k, m, a, c, 100 * (a / m - 1), 100 * (c / m - 1)
  }' "$csv" | sort -t, -k1,1 -k2,2n -k3,3n > "$out.tmp"
{ echo "strategy,servers,workers,measured_samples_per_s,analytic_samples_per_s,cm02_samples_per_s,analytic_error_pct,cm02_error_pct"; cat "$out.tmp"; } > "$out"
rm -f "$out.tmp"
for series in "sync 1" "sync 2" "async-ps 1" "async-ps 2"; do
  set -- $series
  awk -F, -v st="$1" -v sv="$2" 'NR > 1 && $1 == st && $2 == sv' "$out" > "$dir/throughput-$1-s$2.dat"
done
plot() {
  gnuplot <<GP
set terminal $1
set output '$dir/throughput.$2'
set title 'Parameter servers of finite capacity (testbed-ps-dual, fashion-mlp, b = 64 per worker)'
set xlabel 'workers K'
set ylabel 'samples per second'
set key top left
set grid
set datafile separator ','
set xrange [0.5:8.5]
plot '$dir/throughput-sync-s1.dat' using 3:4 with points pt 7 lc 1 title 'sync, 1 server, measured', \
     '' using 3:6 with lines lc 1 dt 1 title 'simgrid CM02', \
     '' using 3:5 with lines lc 1 dt 2 title 'analytic', \
     '$dir/throughput-sync-s2.dat' using 3:4 with points pt 5 lc 2 title 'sync, 2 servers, measured', \
     '' using 3:6 with lines lc 2 dt 1 notitle, '' using 3:5 with lines lc 2 dt 2 notitle, \
     '$dir/throughput-async-ps-s1.dat' using 3:4 with points pt 9 lc 3 title 'async-ps, 1 server, measured', \
     '' using 3:6 with lines lc 3 dt 1 notitle, '' using 3:5 with lines lc 3 dt 2 notitle, \
     '$dir/throughput-async-ps-s2.dat' using 3:4 with points pt 11 lc 4 title 'async-ps, 2 servers, measured', \
     '' using 3:6 with lines lc 4 dt 1 notitle, '' using 3:5 with lines lc 4 dt 2 notitle
GP
}
plot "pngcairo size 900,600" png
plot "svg size 900,600" svg
rm -f "$dir"/throughput-*.dat
echo "wrote $out and $dir/throughput.png/.svg"
