# plot.gp: iteration time against leaf oversubscription, simulated (solid) beside the closed form
# (dashed), one panel per scale, wiring and rank order (experiments/scale/run.sh writes the CSV:
# gpus, wiring, oversubscription, rank_order, job, predict_round_s, simulate_round_s, ...).
#   gnuplot -e "csv='results/scale/results.csv'; out='results/scale/scale'" plot.gp
set datafile separator ","
set key below horizontal maxrows 2 font ",8"
set xlabel "leaf oversubscription (down:up)"
set ylabel "iteration (s)"
set xtics ("1:1" 1, "2:1" 2, "4:1" 4)
set xrange [0.8:4.2]
set grid
# The rows of one series (scale, wiring, rank order, job), in the order run.sh wrote them.
rows(g, w, o, j) = sprintf("< awk -F, '$1 == %s && $2 == \"%s\" && $4 == \"%s\" && $5 == \"%s\"' %s", \
                           g, w, o, j, csv)
panels = "1024:rail:tp-dp-pp 1024:plain:tp-dp-pp 1024:plain:tp-pp-dp 4096:plain:tp-dp-pp"
part(s, n) = word(system("echo ".s." | tr ':' ' '"), n)
colour(p) = p == 4 ? "#1b9e77" : (p == 8 ? "#d95f02" : "#7570b3")
do for [fmt in "pngcairo svg"] {
  if (fmt eq "svg") { set terminal svg size 1100,800 font "Helvetica,11"; set output out.".svg" } \
  else { set terminal pngcairo size 1100,800 font "Helvetica,10"; set output out.".png" }
  set multiplot layout 2,2
  do for [i = 1:4] {
    s = word(panels, i)
    g = part(s, 1); w = part(s, 2); o = part(s, 3)
    set title sprintf("GPT-3 175B on %s H100s, %s wiring, ranks %s", g, w, o)
    plot for [p in "4 8 16"] rows(g, w, o, "gpt3-".g."-p".p) using 3:7 \
           with linespoints lw 2 pt 7 lc rgb colour(p + 0) title "t8 p".p." simulate", \
         for [p in "4 8 16"] rows(g, w, o, "gpt3-".g."-p".p) using 3:6 \
           with lines dt 2 lw 2 lc rgb colour(p + 0) title "t8 p".p." closed form"
  }
  unset multiplot
}
