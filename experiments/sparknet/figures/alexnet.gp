# alexnet.gp: written by `tauplan reproduce`; draws alexnet.png and alexnet.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 900,520 font 'Sans,10'
set output 'alexnet.png'
set key autotitle columnhead
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set title 'SparkNet AlexNet on EC2 g2.8xlarge (simulated): one round of {/Symbol t} = 50 local steps, b = 256'
set xlabel 'workers K (one GPU per node)'
set ylabel 'time per round (s)'
set y2label 'speedup over one GPU, upper bound (x)'
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key below horizontal
plot 'alexnet.csv' using (50*$4):xtic(1) title 'compute (50 C(b))', '' using ($5-50*$4) title 'communication S', '' using 0:8 axes x1y2 with linespoints lw 2 pt 7 lc rgb 'red' title 'speedup if Ma = Na/(K {/Symbol t})'
set terminal svg size 900,520 font 'Sans,10'
set output 'alexnet.svg'
replot
unset output
