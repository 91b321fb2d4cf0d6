# encrypt-plot.gp - throughput per case of benchmarks/encrypt, median with the rounds'
# min-max as error bars; dat: "index case median min max" per line.
#   gnuplot -e "dat='plot.dat'; out='encrypt.png'" encrypt-plot.gp
set terminal pngcairo size 900,480 font ",10"
set output out
set ylabel "GiB/s (median, min-max of the rounds)"
set grid ytics
set key off
set style fill solid 0.5
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by 20 right
plot dat using 1:3:xtic(2) with boxes, dat using 1:3:4:5 with yerrorbars pt 0 lc black
