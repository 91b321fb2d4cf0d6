# plot.gp - the bar chart of benchmarks/run: median MiB/s per case, save and restore,
# min-max as error bars. gnuplot -e "datafile='..'; outfile='..'; title='..'" plot.gp
set terminal pngcairo size 1400,700 noenhanced
set output outfile
set title title
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "MiB/s (median, min-max)"
set yrange [0:*]
set grid ytics
set xtics rotate by -35 scale 0
set key top right
plot datafile using 2:3:4:xtic(1) title "save (pipe -> file)", \
     '' using 5:6:7 title "restore (file -> pipe)"
