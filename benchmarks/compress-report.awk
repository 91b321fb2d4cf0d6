# compress-report.awk - the table of benchmarks/compress from compress.dat
# (guest method save_s restore_s image_bytes save_cpu_s restore_cpu_s rss_kib; one line per
# run): medians per guest and method (seconds also as min-max over the runs), the image's
# ratio to the raw save of the same guest, save CPU seconds per GiB of raw stream. -v speedup=1 (benchmarks/compress --slow): then
# each compressed row's save and restore speed-up over raw-direct of the same guest column.
function median(list,    n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++)
        for (j = i + 1; j <= n; j++)
            if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function span(list,    n, v, i, lo, hi) {   # "min-max" of the list, 2 decimals
    n = split(list, v, " ")
    lo = hi = v[1] + 0
    for (i = 2; i <= n; i++) {
        if (v[i] + 0 < lo) lo = v[i] + 0
        if (v[i] + 0 > hi) hi = v[i] + 0
    }
    return sprintf("%.2f-%.2f", lo, hi)
}
function ratios(a, b,    n, x, y, i, l) {   # min-max over the runs of a[run] / b[run]
    n = split(a, x, " "); split(b, y, " "); l = ""
    for (i = 1; i <= n; i++)
        if (y[i] + 0 > 0)
            l = l " " x[i] / y[i]
    return span(l)
}
{
    k = $1 SUBSEP $2
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    if ($3 == "n/a") { na[k] = 1; next }
    save[k] = save[k] " " $3; rest[k] = rest[k] " " $4; img[k] = img[k] " " $5
    scpu[k] = scpu[k] " " $6; rcpu[k] = rcpu[k] " " $7; rss[k] = rss[k] " " $8
}
END {
    printf "%-9s %-16s %8s %11s %9s %11s %9s %6s %8s %8s %9s %8s\n", "guest", "method",
           "save s", "min-max", "restore s", "min-max", "image MB", "ratio", "save CPU",
           "CPU/GiB", "rest. CPU", "RSS MiB"
    for (i = 1; i <= n; i++) {
        split(order[i], gm, SUBSEP)
        if (na[order[i]]) {
            printf "%-9s %-16s %s\n", gm[1], gm[2], "n/a (not built: the tool has no --compress)"
            continue
        }
        raw = median(img[gm[1] SUBSEP "raw-direct"])
        b = median(img[order[i]]); c = median(scpu[order[i]])
        r = rss[order[i]] ~ /-/ ? "-" : median(rss[order[i]])
        printf "%-9s %-16s %8.2f %11s %9.2f %11s %9.1f %6.3f %8.2f %8.2f %9.2f %8s\n",
               gm[1], gm[2], median(save[order[i]]), span(save[order[i]]),
               median(rest[order[i]]), span(rest[order[i]]), b / 1e6, raw ? b / raw : 0, c,
               raw ? c / (raw / 2^30) : 0, median(rcpu[order[i]]),
               r == "-" ? "-" : sprintf("%.0f", r / 1024)
    }
    if (!speedup)
        exit
    for (i = 1; i <= n; i++) {
        split(order[i], gm, SUBSEP)
        rk = gm[1] SUBSEP "raw-direct"
        if (gm[2] == "raw-direct" || na[order[i]] || !(rk in save))
            continue
        printf "speed-up over raw-direct: %-12s %-16s save %.2fx (%s) restore %.2fx (%s)\n",
               gm[1], gm[2], median(save[rk]) / median(save[order[i]]),
               ratios(save[rk], save[order[i]]), median(rest[rk]) / median(rest[order[i]]),
               ratios(rest[rk], rest[order[i]])
    }
}
