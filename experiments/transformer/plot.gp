# plot.gp: predicted against measured round time of the transformer validation (README.md),
# from results/validate-small.csv and results/validate-wide.csv (written by `tauplan validate`;
# after the memory-kernel and batched-GEMM change) and results/validate-*-first-run.csv (the
# first run, before it, gray);
# run in this folder: gnuplot plot.gp -> results/scatter.png.
set terminal pngcairo size 720,600 font ",11"
set output "results/scatter.png"
set datafile separator ","
set key top left
set logscale xy
set xlabel "measured round (ms, exec threads, wall clock)"
set ylabel "predicted round (ms, analytic engine + CPU profile)"
set title "Decoder block on this 2-core CPU: predicted vs measured round"
set grid
f(x) = x
plot [5:5000][5:5000] \
  f(x) with lines lc rgb "black" title "y = x", \
  1.1 * x with lines dt 2 lc rgb "gray" title "+-10%", \
  0.9 * x with lines dt 2 lc rgb "gray" notitle, \
  "results/validate-small-first-run.csv" every ::1 using ($6*1000):($8*1000) with points pt 7 ps 1.0 lc rgb "#aaaaaa" title "first run (+terms)", \
  "results/validate-wide-first-run.csv" every ::1 using ($6*1000):($8*1000) with points pt 5 ps 1.0 lc rgb "#aaaaaa" notitle, \
  "results/validate-small.csv" every ::1 using ($6*1000):($8*1000) with points pt 7 ps 1.4 lc rgb "#1f77b4" title "block-small (+terms)", \
  "results/validate-wide.csv" every ::1 using ($6*1000):($8*1000) with points pt 5 ps 1.4 lc rgb "#d62728" title "block-wide (+terms)", \
  "results/validate-small.csv" every ::1 using ($6*1000):($7*1000) with points pt 6 ps 1.2 lc rgb "#1f77b4" title "block-small (analytic)", \
  "results/validate-wide.csv" every ::1 using ($6*1000):($7*1000) with points pt 4 ps 1.2 lc rgb "#d62728" title "block-wide (analytic)"
