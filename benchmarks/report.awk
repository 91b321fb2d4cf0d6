#!/usr/bin/awk -f
# report.awk - the tables of benchmarks/run from its raw.tsv (POSIX awk: mawk or gawk).
# Throughput is MiB/s = bytes / seconds / 2^20. Medians and min-max are over the runs;
# a ratio is taken run by run (the two cases of a pair ran next to each other) and its
# median and min-max are shown.
# -v runs=N sweepfile=F cachefile=F plotdata=F

function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) {
        t = a[i] + 0
        for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
        a[j + 1] = t
    }
    if (n == 0) return 0
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function lo(list,    n, a, i, m) {
    n = split(list, a, " "); m = a[1] + 0
    for (i = 2; i <= n; i++) if (a[i] + 0 < m) m = a[i] + 0
    return m
}
function hi(list,    n, a, i, m) {
    n = split(list, a, " "); m = a[1] + 0
    for (i = 2; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0
    return m
}
function thr(d, c, r) {
    k = d SUBSEP c SUBSEP r
    return (k in secs && secs[k] > 0) ? bytes / secs[k] / 1048576 : 0
}
# Throughput of "best of" a comma-separated list of cases in run r.
function best(d, names, r,    n, a, i, v, m) {
    n = split(names, a, ","); m = 0
    for (i = 1; i <= n; i++) { v = thr(d, a[i], r); if (v > m) m = v }
    return m
}
function val(d, name, r) {
    return index(name, ",") ? best(d, name, r) : thr(d, name, r)
}
# One row of the ratio table: A / B run by run, with a target (0: information only).
function ratio(d, a, b, label, target,    r, list, va, vb, m, met) {
    list = ""
    for (r = 1; r <= runs; r++) {
        va = val(d, a, r); vb = val(d, b, r)
        if (va > 0 && vb > 0) list = list " " va / vb
    }
    if (list == "") return
    m = median(list)
    met = target > 0 ? (m >= target ? "met" : "NOT met") : ""
    printf "| %s | %s | %.3f | %.3f-%.3f | %s | %s |\n", d, label, m, lo(list), hi(list),
        (target > 0 ? ">= " target : "-"), met
}

BEGIN { FS = "\t" }
NR == 1 { next }
{
    c = $1; d = $2; r = $3; bytes = $4
    secs[d, c, r] = $5
    k = d SUBSEP c
    if (!(k in seen)) { seen[k] = 1; order[d, ++n[d]] = c }
    cpu[d, c] = cpu[d, c] " " ($6 + $7) / (bytes / 1073741824)
    if ($8 / 1024 > rss[d, c]) rss[d, c] = $8 / 1024
    if ($9 / 1048576 > peak[d, c]) peak[d, c] = $9 / 1048576
    if ($10 / 1048576 > cend[d, c]) cend[d, c] = $10 / 1048576
}
END {
    printf "## %d MiB, %d run(s) interleaved, MiB/s\n\n", bytes / 1048576, runs
    print "| dir | case | median MiB/s | min-max | CPU s/GiB | peak RSS MiB | cache peak MiB | cache after MiB |"
    print "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    split("save restore", dirs, " ")
    for (i = 1; i <= 2; i++) {
        d = dirs[i]
        for (j = 1; j <= n[d]; j++) {
            c = order[d, j]; list = ""
            for (r = 1; r <= runs; r++) if (thr(d, c, r) > 0) list = list " " thr(d, c, r)
            fio = c ~ /^fio/
            printf "| %s | %s | %.0f | %.0f-%.0f | %s | %s | %s | %s |\n", d, c, median(list),
                lo(list), hi(list), fio ? "-" : sprintf("%.2f", median(cpu[d, c])),
                fio ? "-" : sprintf("%.1f", rss[d, c]), fio ? "-" : sprintf("%.0f", peak[d, c]),
                fio ? "-" : sprintf("%.0f", cend[d, c])
            if (plotdata != "") {
                pm[d, c] = median(list); pl[d, c] = lo(list); ph[d, c] = hi(list)
            }
        }
    }
    print ""
    print "## Ratios, run by run (A / B throughput)"
    print ""
    print "| dir | A / B | median | min-max | target | |"
    print "| --- | --- | ---: | ---: | --- | --- |"
    for (i = 1; i <= 2; i++) {
        d = dirs[i]
        ratio(d, "ours-buffered", "floor-buffered", "ours-buffered / floor-buffered", 0.95)
        ratio(d, "ours-direct", "floor-direct", "ours-direct / floor-direct", 0.95)
        ratio(d, "ours-fadvise", "floor-fadvise", "ours-fadvise / floor-fadvise", 0.95)
        ratio(d, "ours-direct", "stock-direct", "ours-direct / stock-direct", 1.25)
        ratio(d, "ours-lv-direct", "stock-direct", "ours-lv-direct / stock-direct (same form)", 0)
        ratio(d, "ours-buffered", "stock-buffered", "ours-buffered / stock-buffered", 0)
        ratio(d, "ours-direct", "fio-qd1,fio-qd4", "ours-direct / best fio", 0.95)
        ratio(d, "ours-fadvise", "ours-buffered,ours-direct,ours-fadvise",
              "ours-fadvise / fastest of ours", 0.95)
        ratio(d, "ours-direct", "dd-direct", "ours-direct / dd-direct", 0)
        ratio(d, "ours-buffered", "cat", "ours-buffered / cat", 0)
    }
    m = 0
    for (i = 1; i <= 2; i++) for (j = 1; j <= n[dirs[i]]; j++) {
        c = order[dirs[i], j]
        if (c ~ /^ours/ && rss[dirs[i], c] > m) m = rss[dirs[i], c]
    }
    printf "\nPeak RSS of our helper, all modes: %.1f MiB (target <= 32): %s\n", m,
        m <= 32 ? "met" : "NOT met"

    if (sweepfile != "") {
        ns = 0
        while ((getline line < sweepfile) > 0) {
            if (line ~ /^pipe_size/) continue
            split(line, f, "\t")
            if (!(f[1] in sw)) { sw[f[1]] = 1; sorder[++ns] = f[1] }
            s1[f[1]] = s1[f[1]] " " bytes / f[3] / 1048576
            s2[f[1]] = s2[f[1]] " " bytes / f[4] / 1048576
        }
        if (ns > 0) {
            print ""
            print "## Pipe-size sweep: our helper, MiB/s (median, min-max)"
            print ""
            print "| --pipe-size | --direct save | pipe -> /dev/null |"
            print "| --- | ---: | ---: |"
            for (i = 1; i <= ns; i++) {
                p = sorder[i]
                printf "| %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) |\n", p, median(s1[p]),
                    lo(s1[p]), hi(s1[p]), median(s2[p]), lo(s2[p]), hi(s2[p])
            }
        }
    }
    if (cachefile != "") {
        first = 1
        while ((getline line < cachefile) > 0) {
            if (line ~ /^mode/) continue
            split(line, f, "\t")
            if (first) {
                print ""
                printf "## Page cache held by the image during a %d MiB save (sampled every 100 ms)\n\n", f[2] / 1048576
                print "| mode | peak MiB | after MiB | target |"
                print "| --- | ---: | ---: | --- |"
                first = 0
            }
            printf "| %s | %.0f | %.0f | %s |\n", f[1], f[3] / 1048576, f[4] / 1048576,
                f[1] == "fadvise" ? (f[3] <= 64 * 1048576 ? "<= 64: met" : "<= 64: NOT met") : "-"
        }
    }
    if (plotdata != "") {
        print "# case save save_lo save_hi restore restore_lo restore_hi" > plotdata
        for (j = 1; j <= n["save"]; j++) {
            c = order["save", j]
            printf "%s %.0f %.0f %.0f %.0f %.0f %.0f\n", c, pm["save", c], pl["save", c],
                ph["save", c], pm["restore", c], pl["restore", c], ph["restore", c] > plotdata
        }
        close(plotdata)
    }
}
