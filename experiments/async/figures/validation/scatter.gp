# scatter.gp: written by `tauplan validate`; draws scatter.png and scatter.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 900,700 font 'Sans,10'
set output 'scatter.png'
set title 'tauplan validate: predicted against measured (this machine, lockstep)'
set xlabel 'measured (s)'
set ylabel 'predicted (s)'
set logscale xy
set xrange [0.000533004092597188:4.273852841999997]
set yrange [0.000533004092597188:4.273852841999997]
set key top left
set grid
plot x title 'y = x' with lines lc rgb '#888888', \
  'validation.csv' using 'round_measured_s':'round_analytic_s' title 'round, analytic' with points pt 7 lc rgb '#1f77b4', \
  '' using 'round_measured_s':'round_simgrid_s' title 'round, simgrid' with points pt 6 ps 1.6 lc rgb '#ff7f0e', \
  '' using 'time_measured_s':'time_analytic_s' title 'time to target, analytic (LOO)' with points pt 5 lc rgb '#2ca02c', \
  '' using 'time_measured_s':'time_simgrid_s' title 'time to target, simgrid (LOO)' with points pt 4 ps 1.6 lc rgb '#d62728'
set terminal svg size 900,700 font 'Sans,10'
set output 'scatter.svg'
replot
unset output
