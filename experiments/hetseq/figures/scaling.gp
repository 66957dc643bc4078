# scaling.gp: written by `tauplan reproduce`; draws scaling.png and scaling.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 900,520 font 'Sans,10'
set output 'scaling.png'
set key autotitle columnhead
set title 'BERT-base as yifding/hetseq runs it, on hetseq-crc-titanxp (simulated), 32 sequences per GPU x 4 micro-batches'
set xlabel 'nodes (4 GPUs each)'
set ylabel 'speedup in sequences/s over 1 node (x)'
set y2label 'scaling efficiency (%)'
set ytics nomirror
set y2tics
set logscale x 2
set xtics (1,2,4,8)
set xrange [0.8:10]
set yrange [0:*]
set y2range [0:110]
set grid
set key top left
plot 'scaling.csv' using 1:8 with linespoints lw 2 pt 7 title 'speedup (simulated)', '' using 1:10 with points pt 5 ps 1.5 lc rgb 'black' title 'speedup (yifding/hetseq README)', '' using 1:1 with lines dt 2 lc rgb 'gray' title 'linear', '' using 1:($9*100) axes x1y2 with linespoints lw 2 pt 5 title 'efficiency (%)'
set terminal svg size 900,520 font 'Sans,10'
set output 'scaling.svg'
replot
unset output
