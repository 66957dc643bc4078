#!/usr/bin/env bash
# runs_spread.sh: how far apart several runs of one testbed matrix are (issue 27 item 5: fresh
# calibrations should predict every configuration within 1% of each other). Reads
# DIR/testbed-validation.csv of each run (written by `tauplan validate --testbed MATRIX --out DIR`,
# or by `--replay`), joins the rows by configuration name and, where a name stands more than once
# in a run (two placements of one ring share a name), by its occurrence: the second row of a name
# is joined with the second of that name in every other run and printed as "NAME #2". It writes
# to stdout one CSV line per configuration present in every run: the spread (largest / smallest
# - 1, in %) of the measured round and of each engine's predicted round (analytic, simgrid CM02)
# across the runs; then a summary line per column to stderr: the largest spread, its
# configuration, and how many configurations are within 1%. Usage:
#   bash experiments/testbed/runs_spread.sh DIR1 DIR2 [DIR3 ...] > spread.csv
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: runs_spread.sh DIR1 DIR2 [DIR3 ...]" >&2; exit 2; }
for dir in "$@"; do
  [ -f "$dir/testbed-validation.csv" ] || { echo "runs_spread.sh: no $dir/testbed-validation.csv" >&2; exit 2; }
done
runs=$#
for dir in "$@"; do
  # config (the quoted first field), then the three rounds, by column name.
  awk -F, '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    {
      name = $0; sub(/^"/, "", name); sub(/",.*$/, "", name)
      if (++seen[name] > 1) name = name " #" seen[name]
      rest = $0; sub(/^"[^"]*"/, "x", rest); split(rest, f, ",")
      print name "\t" f[col["round_measured_s"]] "\t" f[col["round_analytic_s"]] "\t" f[col["round_simgrid_cm02_s"]]
    }' "$dir/testbed-validation.csv"
done | awk -F'\t' -v runs="$runs" '
  function spread(lo, hi) { return lo > 0 ? 100 * (hi / lo - 1) : -1 }
  {
    n[$1]++
    if (!($1 in order)) { order[$1] = ++count; names[count] = $1 }
    for (c = 2; c <= 4; ++c) {
      key = $1 SUBSEP c
      if (!(key in lo) || $c < lo[key]) lo[key] = $c
      if (!(key in hi) || $c > hi[key]) hi[key] = $c
    }
  }
  END {
    print "config,runs,measured_spread_pct,analytic_spread_pct,cm02_spread_pct"
    split("measured analytic cm02", label, " ")
    for (c = 2; c <= 4; ++c) worst[c] = -1
    for (i = 1; i <= count; ++i) {
      name = names[i]
      if (n[name] != runs) continue
      line = "\"" name "\"," runs
      for (c = 2; c <= 4; ++c) {
        s = spread(lo[name SUBSEP c], hi[name SUBSEP c])
        line = line sprintf(",%.2f", s)
        if (s > worst[c]) { worst[c] = s; worst_at[c] = name }
        if (s <= 1) within[c]++
        rows[c]++
      }
      print line
    }
    for (c = 2; c <= 4; ++c)
      printf "runs_spread: %s round: largest spread %.2f%% (%s); %d of %d configurations within 1%%\n",
        label[c - 1], worst[c], worst_at[c], within[c], rows[c] > "/dev/stderr"
  }'
