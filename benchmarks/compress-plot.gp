# compress-plot.gp - image size against save time per method (benchmarks/compress), one
# panel per guest; dir/plot-GUEST.dat are compress.dat's lines of that guest.
#   gnuplot -e "dir='D'; guests='bench random'; out='compress.png'" compress-plot.gp
set terminal pngcairo size 1200,540 font ",10"
set output out
set multiplot layout 1,words(guests)
set xlabel "save seconds (QEMU included, synced)"
set ylabel "image MB"
set grid
set key off
set xrange [0:*]
set yrange [0:*]
do for [g in guests] {
    set title sprintf("guest: %s", g)
    f = dir . "/plot-" . g . ".dat"
    plot f using 3:($5 / 1e6) with points pt 7 ps 1.2, \
         f using 3:($5 / 1e6):2 with labels offset 0,0.9 font ",8"
}
unset multiplot
