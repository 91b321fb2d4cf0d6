# nbd-plot.gp - the bar chart of benchmarks/nbd: median MiB/s per server and case, save
# (pipe -> NBD) and restore (NBD -> pipe), min-max as error bars.
# gnuplot -e "datafile='..'; outfile='..'; title='..'" nbd-plot.gp
set terminal pngcairo size 1800,800 noenhanced
set output outfile
set title title
set datafile missing '?'
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "MiB/s (median, min-max)"
set yrange [0:*]
set grid ytics
set xtics rotate by -45 scale 0 font ",9"
set bmargin 12
set key top right
plot datafile using 2:3:4:xtic(1) title "save (pipe -> NBD)", \
     '' using 5:6:7 title "restore (NBD -> pipe)"
