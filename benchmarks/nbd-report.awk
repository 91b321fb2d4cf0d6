#!/usr/bin/awk -f
# nbd-report.awk - the tables of benchmarks/nbd from its raw.tsv (POSIX awk: mawk or gawk).
# Throughput is MiB/s = bytes / seconds / 2^20; medians and min-max over the runs. A ratio
# is taken run by run (the two cases of a pair ran a few seconds apart) and its median and
# min-max are shown, with the issue's target where it has one. CPU busy: the machine's CPUs
# (all processes) during the case, median %. Where the time went, per case (medians): the
# CPU used by the server, the client and the pipe's other end in % of one core, the
# machine's busy and iowait %, and which side limits, the first that holds: "disk" when
# iowait is 20% or more of the machine; "CPU (ours)" when server, client and pipe end
# together use 85% or more of all cores (no side can go faster without taking CPU from
# another); "CPU (shared)" when the cores are 90% busy with others' work too; "server
# CPU" or "client CPU" when that side uses 90% of a core or more (its one busy thread);
# else "server waits" (CPUs idle: the client waits for the server's rate or latency).
# -v runs=N ncpu=N plotdata=FILE

# sorted(list, a): the numbers of a space-separated list into a[1..n], ascending; n.
function sorted(list, a,    n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) a[i] += 0
    for (i = 1; i < n; i++)
        for (j = i + 1; j <= n; j++)
            if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n
}
function median(list,    a, n) {
    n = sorted(list, a)
    return n == 0 ? 0 : n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function lo(list,    a) { return sorted(list, a) ? a[1] : 0 }
function hi(list,    a, n) { n = sorted(list, a); return n ? a[n] : 0 }
function thr(k, r) {
    return ((k, r) in secs && secs[k, r] > 0) ? size[k] / secs[k, r] / 1048576 : 0
}
function series(k,    r, list) {
    list = ""
    for (r = 1; r <= runs; r++) if (thr(k, r) > 0) list = list " " thr(k, r)
    return list
}
# One row of the ratio table: case A / case B of group G, direction D, run by run.
function ratio(g, d, a, b, target, note,    r, list, va, vb, m, t, verdict) {
    list = ""
    for (r = 1; r <= runs; r++) {
        va = thr(g SUBSEP a SUBSEP d, r); vb = thr(g SUBSEP b SUBSEP d, r)
        if (va > 0 && vb > 0) list = list " " va / vb
    }
    if (list == "") return
    m = median(list)
    if (target <= 0) { t = "-"; verdict = note }
    else {
        t = ">= " target
        verdict = lo(list) >= target ? "met (every run)" : (m >= target ? "met (median)" : "NOT met")
    }
    printf "| %s | %s | %s / %s | %.2f | %.2f-%.2f | %s | %s |\n", g, d, a, b, m, lo(list),
        hi(list), t, verdict
}

BEGIN { FS = "\t" }
NR == 1 { next }
{
    k = $1 SUBSEP $2 SUBSEP $3
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    secs[k, $4] = $6
    size[k] = $5
    busy[k] = busy[k] " " $7
    if (NF >= 11 && $6 > 0) {
        iow[k] = iow[k] " " $8
        core[k, "server"] = core[k, "server"] " " 100 * $9 / $6
        core[k, "client"] = core[k, "client"] " " 100 * $10 / $6
        core[k, "ends"] = core[k, "ends"] " " 100 * $11 / $6
        perg[k] = perg[k] " " ($9 + $10 + $11) / ($5 / 1073741824)
        have_where = 1
    }
}
# Where the time of case k went: one row.
function where(k,    f, b, w, lim) {
    split(k, f, SUBSEP)
    b = median(busy[k]); w = median(iow[k])
    sv = median(core[k, "server"]); cl = median(core[k, "client"]); en = median(core[k, "ends"])
    lim = w >= 20 ? "disk" : sv + cl + en >= 85 * ncpu ? "CPU (ours)" : b >= 90 ? "CPU (shared)" \
        : sv >= 90 ? "server CPU" : cl >= 90 ? "client CPU" : "server waits"
    printf "| %s | %s | %s | %.0f | %.0f / %.0f / %.0f | %.1f | %.0f | %.0f | %s |\n", f[1], f[2],
        f[3], median(series(k)), sv, cl, en, median(perg[k]), b, w, lim
}
END {
    printf "### MiB/s, median (min-max) of %d run(s)\n\n", runs
    print "| server | case | save: pipe -> NBD | restore: NBD -> pipe | CPU busy % save / restore |"
    print "| --- | --- | ---: | ---: | ---: |"
    for (i = 1; i <= n; i++) {
        split(order[i], f, SUBSEP)
        row = f[1] SUBSEP f[2]
        if (row in done) continue
        done[row] = 1
        ks = row SUBSEP "save"; kr = row SUBSEP "restore"
        s = series(ks); t = series(kr)
        cs = s == "" ? "-" : sprintf("%.0f (%.0f-%.0f)", median(s), lo(s), hi(s))
        cr = t == "" ? "-" : sprintf("%.0f (%.0f-%.0f)", median(t), lo(t), hi(t))
        bs = s == "" ? "-" : sprintf("%.0f", median(busy[ks]))
        br = t == "" ? "-" : sprintf("%.0f", median(busy[kr]))
        printf "| %s | %s | %s | %s | %s / %s |\n", f[1], f[2], cs, cr, bs, br
        if (plotdata != "")
            printf "\"%s: %s\" %s %s %s %s %s %s\n", f[1], f[2],
                s == "" ? "?" : median(s), s == "" ? "?" : lo(s), s == "" ? "?" : hi(s),
                t == "" ? "?" : median(t), t == "" ? "?" : lo(t), t == "" ? "?" : hi(t) > plotdata
    }
    if (plotdata != "") close(plotdata)

    print ""
    print "### Ratios, run by run (A / B throughput)"
    print ""
    print "| server | dir | A / B | median | min-max | target | |"
    print "| --- | --- | --- | ---: | ---: | --- | --- |"
    ratio("file", "save", "ours", "nbdcopy", 1.3)
    ratio("file", "save", "ours", "ours-fadvise-local", 0.9)
    ratio("file", "restore", "ours", "nbdcopy", 1.0)
    ratio("memory", "save", "ours", "nbdcopy", 0, "protocol cost")
    ratio("memory", "restore", "ours", "nbdcopy", 1.0)
    ratio("qemu", "save", "ours", "nbdcopy", 0, "qemu-nbd")
    ratio("qemu", "restore", "ours", "nbdcopy", 1.0)
    ratio("sweep", "save", "ours connections=4", "ours connections=1", 1.2)
    ratio("sweep", "restore", "ours connections=4", "ours connections=1", 0, "multi-conn")
    ratio("perconn", "save", "ours connections=4", "ours connections=1", 0, "a limit per connection")
    ratio("perconn", "restore", "ours connections=4", "ours connections=1", 0, "a limit per connection")
    ratio("file", "save", "ours", "ours-conn1", 0, "4 vs 1 connection, disk-bound")
    ratio("sweep", "save", "ours requests=16", "ours requests=1", 0, "overlap")
    ratio("sweep", "restore", "ours requests=16", "ours requests=1", 0, "overlap")
    ratio("sweep", "save", "ours request-size=256K", "ours request-size=4M", 0, "request size")
    ratio("sweep", "restore", "ours request-size=256K", "ours request-size=4M", 0, "request size")
    ratio("slow-comp", "save", "ours-compress", "ours", 0, "compressible, slow link")
    ratio("slow-rand", "save", "ours-compress", "ours", 0, "random, slow link")
    ratio("slow-comp", "save", "ours-compress", "nbdcopy", 0, "compressible, slow link")

    if (!have_where) exit
    print ""
    print "### Where the time went (medians): the bottleneck per case"
    print ""
    print "| server | case | dir | MiB/s | CPU % of a core: server / client / pipe end | CPU-s per GiB (all three) | machine busy % | iowait % | limit |"
    print "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
    for (i = 1; i <= n; i++) if (order[i] in perg) where(order[i])
}
