# compress-plot.gp - image size against save time per method (benchmarks/compress), one
# panel per guest; dir/plot-GUEST.dat: one line per method, "method save_median image_bytes
# save_min save_max" (the bars span the rounds). Log time axis: libvirt's gzip and xz take
# 10 to 100 times longer than the rest.
#   gnuplot -e "dir='D'; guests='bench random'; out='compress.png'" compress-plot.gp
set terminal pngcairo size 1400,620 font ",10"
set output out
set multiplot layout 1,words(guests)
set xlabel "save seconds, median and min-max of the rounds (QEMU included, synced; log scale)"
set ylabel "image MB"
set grid
set key off
set logscale x
set xrange [1:1000]
set yrange [0:*]
do for [g in guests] {
    set title sprintf("guest: %s", g)
    f = dir . "/plot-" . g . ".dat"
    plot f using 2:($3 / 1e6):4:5 with xerrorbars pt 7 ps 1.0, \
         f using 2:($3 / 1e6):1 with labels left offset 0.6,0 rotate by 30 font ",8"
}
unset multiplot
