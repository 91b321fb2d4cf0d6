#!/usr/bin/awk -f
# newstack-report.awk - the tables of benchmarks/newstack from its raw.tsv: per fill, per
# configuration (in the order given by -v order), median (min-max) of each column over
# the rounds. Writes plot-FILL.dat (save and restore seconds) into -v plotdir.
function sortnum(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) {
        t = a[i]
        for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
        a[j + 1] = t
    }
}
# stats KEY -> sets MED, MIN, MAX over the values of KEY
function stats(key,    n, a, i) {
    n = split(vals[key], a, " ")
    for (i = 1; i <= n; i++) a[i] += 0
    sortnum(a, n)
    MIN = a[1]; MAX = a[n]
    MED = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function cell(key, scale, fmt,    s) {
    stats(key)
    s = sprintf(fmt, MED / scale)
    if (sprintf(fmt, MIN / scale) != sprintf(fmt, MAX / scale))
        s = s sprintf(" (" fmt "-" fmt ")", MIN / scale, MAX / scale)
    return s
}
BEGIN { FS = "\t"; ncols = split("save_s sync_s restore_s disk_bytes apparent_bytes cpu_save_s cpu_restore_s cache_bytes", cols, " ") }
NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
{
    if (!($1 in seenfill)) { seenfill[$1] = 1; fills[++nfills] = $1 }
    rounds[$1] = ($3 > rounds[$1]) ? $3 : rounds[$1]
    for (c = 1; c <= ncols; c++) vals[$1 SUBSEP $2 SUBSEP cols[c]] = vals[$1 SUBSEP $2 SUBSEP cols[c]] " " $(idx[cols[c]])
    have[$1 SUBSEP $2] = 1
}
END {
    ncfg = split(order, cfg, " ")
    for (f = 1; f <= nfills; f++) {
        fl = fills[f]
        printf "### %s fill, median (min-max) of %d round(s)\n\n", fl, rounds[fl]
        print "| configuration | save s | sync s | restore s | on disk MiB | apparent MiB | CPU save s | CPU restore s | cache after save MiB |"
        print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        dat = plotdir "/plot-" fl ".dat"
        printf "" > dat
        for (i = 1; i <= ncfg; i++) {
            k = fl SUBSEP cfg[i]
            if (!(k in have)) continue
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cfg[i],
                cell(k SUBSEP "save_s", 1, "%.2f"), cell(k SUBSEP "sync_s", 1, "%.2f"),
                cell(k SUBSEP "restore_s", 1, "%.2f"), cell(k SUBSEP "disk_bytes", 1048576, "%.0f"),
                cell(k SUBSEP "apparent_bytes", 1048576, "%.0f"), cell(k SUBSEP "cpu_save_s", 1, "%.1f"),
                cell(k SUBSEP "cpu_restore_s", 1, "%.1f"), cell(k SUBSEP "cache_bytes", 1048576, "%.0f")
            stats(k SUBSEP "save_s"); line = sprintf("%s %.3f %.3f %.3f", cfg[i], MED, MIN, MAX)
            stats(k SUBSEP "restore_s"); line = line sprintf(" %.3f %.3f %.3f", MED, MIN, MAX)
            print line >> dat
        }
        close(dat)
        print ""
    }
}
