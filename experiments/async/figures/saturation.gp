# saturation.gp: written by experiments/async/run.py; draws saturation.png and saturation.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 900,540 font 'Sans,10'
set output 'saturation.png'
set key autotitle columnhead
set title 'async-ps, ResNet-50 b=32, one parameter server (ps0, 8 Gb/s) on cloud-k80-p100-v100'
set xlabel 'workers K (all of one GPU type)'
set ylabel 'throughput (images/s)'
set xrange [0.5:8.5]
set yrange [0:*]
set grid
set key top left
plot 'saturation.csv' every ::0::7 using 2:5 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'K80 analytic', \
  '' every ::0::7 using 2:6 with points pt 6 ps 1.8 lc rgb '#1f77b4' title 'K80 simgrid', \
  '' every ::8::15 using 2:5 with linespoints lw 2 pt 5 lc rgb '#ff7f0e' title 'P100 analytic', \
  '' every ::8::15 using 2:6 with points pt 4 ps 1.8 lc rgb '#ff7f0e' title 'P100 simgrid', \
  '' every ::16::23 using 2:5 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'V100 analytic', \
  '' every ::16::23 using 2:6 with points pt 8 ps 1.8 lc rgb '#2ca02c' title 'V100 simgrid'
set terminal svg size 900,540 font 'Sans,10'
set output 'saturation.svg'
replot
unset output
