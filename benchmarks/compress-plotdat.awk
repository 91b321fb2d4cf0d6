# compress-plotdat.awk - the plot's data (benchmarks/compress-plot.gp) from compress.dat: for
# the guest -v g=GUEST, one line per method: method save_median image_bytes save_min save_max
$1 == g && $3 != "n/a" {
    if (!($2 in n)) order[++m] = $2
    k = $2; v[k, ++n[k]] = $3; img[k] = $5
}
END {
    for (i = 1; i <= m; i++) {
        k = order[i]; c = n[k]
        for (a = 1; a <= c; a++) for (b = a + 1; b <= c; b++)
            if (v[k, b] < v[k, a]) { t = v[k, a]; v[k, a] = v[k, b]; v[k, b] = t }
        med = c % 2 ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2
        print k, med, img[k], v[k, 1], v[k, c]
    }
}
