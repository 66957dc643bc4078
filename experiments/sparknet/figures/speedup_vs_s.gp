# speedup_vs_s.gp: written by `tauplan reproduce`; draws speedup_vs_s.png and speedup_vs_s.svg from the CSV beside it.
set datafile separator ','
set terminal pngcairo size 1100,520 font 'Sans,10'
set output 'speedup_vs_s.png'
set key autotitle columnhead
set logscale xy
set grid
set title 'Speedup over one worker against the communication overhead, K = 5, fashion-mlp (measured Na, Ma, C(b)=0.862 ms, C(b/K)=0.364 ms)'
set xlabel 'S / C(b)  (communication time per sync / compute time per step)'
set ylabel 'speedup over serial SGD (x)'
set key outside right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3
plot 'speedup_vs_s.csv' using 1:2 with lines lw 3 dt 2 lc rgb 'black' title 'naive C(b)/(C(b/K)+S)', '' using 1:3 with lines lw 1.5 title 'SparkNet {/Symbol t} = 1', '' using 1:4 with lines lw 1.5 title 'SparkNet {/Symbol t} = 2', '' using 1:5 with lines lw 1.5 title 'SparkNet {/Symbol t} = 5', '' using 1:6 with lines lw 1.5 title 'SparkNet {/Symbol t} = 10', '' using 1:7 with lines lw 1.5 title 'SparkNet {/Symbol t} = 25', '' using 1:8 with lines lw 1.5 title 'SparkNet {/Symbol t} = 100', '' using 1:9 with lines lw 3 lc rgb 'red' title 'SparkNet, best {/Symbol t} at each S'
set terminal svg size 1100,520 font 'Sans,10'
set output 'speedup_vs_s.svg'
replot
unset output
