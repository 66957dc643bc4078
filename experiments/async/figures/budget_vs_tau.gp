# budget_vs_tau.gp: written by experiments/async/run.py; draws budget_vs_tau.png and budget_vs_tau.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 900,540 font 'Sans,10'
set output 'budget_vs_tau.png'
set key autotitle columnhead
set title 'local SGD, 3 V100 + 1 K80 (one slow worker), ResNet-50 b=32: fixed tau against a time budget of tau V100 steps'
set xlabel 'tau (fixed), or budget = tau x C_{V100}(b)'
set ylabel 'hours to target'
set logscale x 2
set xtics (4,8,16,32)
set yrange [0:*]
set grid
set key top right
plot 'budget_vs_tau.csv' using 1:6 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'fixed tau, analytic', \
  '' using 1:7 with points pt 6 ps 1.8 lc rgb '#1f77b4' title 'fixed tau, simgrid', \
  '' using 1:11 with linespoints lw 2 pt 5 lc rgb '#d62728' title 'time budget, analytic', \
  '' using 1:12 with points pt 4 ps 1.8 lc rgb '#d62728' title 'time budget, simgrid'
set terminal svg size 900,540 font 'Sans,10'
set output 'budget_vs_tau.svg'
replot
unset output
