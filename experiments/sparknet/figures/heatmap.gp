# heatmap.gp: written by `tauplan reproduce`; draws heatmap.png and heatmap.svg from the CSVs beside it.
set datafile separator ','
set terminal pngcairo size 1200,520 font 'Sans,10'
set output 'heatmap.png'
set multiplot layout 1,2 title 'Zero-overhead speedup Na(b)/({/Symbol t} Ma(b,K,{/Symbol t})), fashion-mlp, b = 16, target 0.8 test accuracy'
set xtics ('1' 0, '2' 1, '5' 2, '10' 3, '25' 4, '100' 5)
set ytics 1
set xlabel 'local steps per round {/Symbol t}'
set ylabel 'workers K'
set cblabel 'speedup (x)'
set cbrange [0:6]
set palette rgbformulae 33,13,10
set xrange [-0.5:5.5]
set yrange [1-0.5:8+0.5]
set title 'measured (exec, lockstep)'
plot 'heatmap_measured.csv' using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f',$3)) with labels notitle
set title 'fitted critical-batch model'
plot 'heatmap_fitted.csv' using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f',$3)) with labels notitle
unset multiplot
set terminal svg size 1200,520 font 'Sans,10'
set output 'heatmap.svg'
set multiplot layout 1,2 title 'Zero-overhead speedup Na(b)/({/Symbol t} Ma(b,K,{/Symbol t})), fashion-mlp, b = 16, target 0.8 test accuracy'
set xtics ('1' 0, '2' 1, '5' 2, '10' 3, '25' 4, '100' 5)
set ytics 1
set xlabel 'local steps per round {/Symbol t}'
set ylabel 'workers K'
set cblabel 'speedup (x)'
set cbrange [0:6]
set palette rgbformulae 33,13,10
set xrange [-0.5:5.5]
set yrange [1-0.5:8+0.5]
set title 'measured (exec, lockstep)'
plot 'heatmap_measured.csv' using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f',$3)) with labels notitle
set title 'fitted critical-batch model'
plot 'heatmap_fitted.csv' using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f',$3)) with labels notitle
unset multiplot
unset output
