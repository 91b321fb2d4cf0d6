# benchmarks/evacuate.gp - aggregate throughput of N concurrent saves per configuration
# gnuplot -e "tsv='evacuate.tsv'; png='evacuate.png'" evacuate.gp
set terminal png size 1000,500
set output png
set style data histograms
set style histogram clustered
set style fill solid border -1
set ylabel "aggregate MB/s"
set yrange [0:*]
set xtics rotate by -30
set key off
plot tsv using 3:xtic(sprintf("%s N=%d", stringcolumn(1), $2)) title "MB/s"
