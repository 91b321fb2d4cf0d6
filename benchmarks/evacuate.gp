# benchmarks/evacuate.gp - N concurrent saves per configuration (producers, then guests):
# aggregate throughput, slowest/fastest finish, and the memory held at peak (the helpers'
# private memory, the images' page cache).
# gnuplot -e "tsv='evacuate.tsv'; png='evacuate.png'" evacuate.gp  (optional: title='...')
if (!exists("title")) title = ""
set terminal png size 1400,1000
set output png
set datafile separator "\t"
set style data histograms
set style histogram clustered
set style fill solid border -1
set xtics rotate by -40 font ",8"
set yrange [0:*]
label(c, n) = sprintf("%s N=%d", c, n)
set multiplot layout 3,1 title title
set key off
set ylabel "aggregate MB/s"
plot tsv using 3:xtic(label(stringcolumn(1), $2)) title "MB/s"
set ylabel "slowest / fastest finish"
plot tsv using 6:xtic(label(stringcolumn(1), $2)) title "slow/fast"
set key top left
set ylabel "MiB at peak"
set logscale y
set yrange [0.1:*]
plot tsv using ($7 + 0.1):xtic(label(stringcolumn(1), $2)) title "helpers' private memory", \
     '' using ($9 + 0.1) title "page cache of the images"
unset multiplot
