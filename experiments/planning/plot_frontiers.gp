# plot_frontiers.gp: two Pareto frontiers of `tauplan plan` (frontier.csv) on one plot, for the
# what-if studies of README.md. Each frontier.csv has the columns
#   time_s,cost,nodes,workers,strategy,collective,servers,split,batch_per_worker,tau,round_s,
#   rounds,failure_free_s,revocations_per_hour,bottleneck,frontier,layout
# Usage (run.sh does this):
#   gnuplot -e "a='A.plan/frontier.csv'; la='label A'; b='B.plan/frontier.csv'; lb='label B'; \
#               out='study'; deadline=12" plot_frontiers.gp
# writes study.png and study.svg; `deadline` (hours) draws a vertical line when > 0.
if (!exists("deadline")) deadline = 0
if (!exists("ttl")) ttl = "Pareto frontiers: expected time against expected cost"
set datafile separator ','
set xlabel 'expected time to target (hours)'
set ylabel 'expected cost ($)'
set logscale xy
set grid
set key top right
set title ttl noenhanced
if (deadline > 0) {
  set arrow from deadline, graph 0 to deadline, graph 1 nohead dashtype 2 lc rgb '#cc0000'
  set label 'deadline' at deadline, graph 0.95 right offset -0.5,0 tc rgb '#cc0000'
}
do for [fmt in "png svg"] {
  if (fmt eq "png") { set terminal pngcairo size 900,600 noenhanced } else { set terminal svg size 900,600 noenhanced }
  set output out.'.'.fmt
  plot a skip 1 using ($1/3600):2 with linespoints pt 7 ps 0.8 lw 1.5 lc rgb '#1f77b4' title la, \
       b skip 1 using ($1/3600):2 with linespoints pt 5 ps 0.8 lw 1.5 lc rgb '#d62728' title lb
}
