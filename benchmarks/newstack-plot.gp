# newstack-plot.gp - benchmarks/newstack's plot: median save and restore seconds per
# configuration, min-max as error bars, one panel per fill (dir/plot-FILL.dat).
#   gnuplot -e "outfile='..'; dir='..'; fills='random halfzero'; title='..'" newstack-plot.gp
n = words(fills)
set terminal pngcairo size 1400,(420 * n + 60) noenhanced
set output outfile
set multiplot layout n,1 title title
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "seconds (median, min-max)"
set yrange [0:*]
set grid ytics
set xtics rotate by -25 scale 0
set key top left
do for [i = 1:n] {
    set title word(fills, i) . " fill"
    plot dir . "/plot-" . word(fills, i) . ".dat" using 2:3:4:xtic(1) title "save", \
         '' using 5:6:7 title "restore"
}
unset multiplot
