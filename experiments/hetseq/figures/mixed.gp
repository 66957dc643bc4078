# mixed.gp: written by `tauplan reproduce`; draws mixed.png and mixed.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 800,520 font 'Sans,10'
set output 'mixed.png'
set key autotitle columnhead
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.5
set title 'BERT-base on 16 mixed GPUs (V100, TITAN Xp, RTX 2080 Ti, GTX 1080 Ti; simulated)'
set xlabel 'batch split'
set ylabel 'time per step (s)'
set yrange [0:*]
set key top right
plot 'mixed.csv' using 5:xtic(1) title 'compute (slowest GPU)', '' using ($4-$5) title 'exposed communication'
set terminal svg size 800,520 font 'Sans,10'
set output 'mixed.svg'
replot
unset output
