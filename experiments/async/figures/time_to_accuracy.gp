# time_to_accuracy.gp: written by experiments/async/run.py; draws time_to_accuracy.png and time_to_accuracy.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 1000,600 font 'Sans,10'
set output 'time_to_accuracy.png'
set key autotitle columnhead
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
plot 'time_to_accuracy.csv' every ::0::6 using 7:xtic(2) title 'kappa = 1 (noiseless worst case)' lc rgb '#1f77b4', \
  '' every ::7::13 using 7 title 'kappa = 0.25' lc rgb '#ff7f0e', \
  '' every ::14::20 using 7 title 'kappa = 0 (staleness free)' lc rgb '#2ca02c'
set terminal svg size 1000,600 font 'Sans,10'
set output 'time_to_accuracy.svg'
replot
unset output
