# plot-heldout.gp: predicted against measured round time of the held-out decoder shape
# (block-heldout2, validate-heldout2.yaml, README.md "Second held-out shape"): its three runs
# (results/validate-heldout2-run1-contended.csv, -run2.csv, validate-heldout2.csv), and beside
# them the training-set shapes after the second change (results/validate-*-second-change.csv,
# gray); run in this folder: gnuplot plot-heldout.gp -> results/scatter-heldout.png.
set terminal pngcairo size 720,600 font ",11"
set output "results/scatter-heldout.png"
set datafile separator ","
set key top left
set logscale xy
set xlabel "measured round (ms, exec threads, wall clock)"
set ylabel "predicted round (ms, analytic engine + CPU profile, +terms)"
set title "Held-out decoder shape on this 2-core CPU: predicted vs measured round"
set grid
f(x) = x
plot [10:1000][10:1000] \
  f(x) with lines lc rgb "black" title "y = x", \
  1.1 * x with lines dt 2 lc rgb "gray" title "+-10%", \
  0.9 * x with lines dt 2 lc rgb "gray" notitle, \
  "results/validate-small-second-change.csv" every ::1 using ($6*1000):($8*1000) with points pt 7 ps 1.0 lc rgb "#bbbbbb" title "training set after the change", \
  "results/validate-wide-second-change.csv" every ::1 using ($6*1000):($8*1000) with points pt 7 ps 1.0 lc rgb "#bbbbbb" notitle, \
  "results/validate-heldout-second-change.csv" every ::1 using ($6*1000):($8*1000) with points pt 7 ps 1.0 lc rgb "#bbbbbb" notitle, \
  "results/validate-heldout2-run1-contended.csv" every ::1 using ($6*1000):($8*1000) with points pt 1 ps 1.6 lc rgb "#ff7f0e" title "held out, run 1 (contended)", \
  "results/validate-heldout2-run2.csv" every ::1 using ($6*1000):($8*1000) with points pt 6 ps 1.6 lc rgb "#2ca02c" title "held out, run 2 (idle)", \
  "results/validate-heldout2.csv" every ::1 using ($6*1000):($8*1000) with points pt 7 ps 1.4 lc rgb "#1f77b4" title "held out, run 3 (idle)"
