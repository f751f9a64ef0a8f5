# SPDX-License-Identifier: GPL-2.0
# Turn the benchmark's result lines into the rxe/rrxe comparison table
# (tools/bench/run.sh feeds it the guest's results).
#
# Input: lines containing "TAG ROUND DRIVER TEST VALUE" or
# "TAG ROUND DRIVER TEST FAILED REASON..." (TAG is -v tag=..., default BENCH-RUN;
# anything before TAG on the line is ignored). A VALUE ending in "*" was measured
# while other processes used the host's CPUs (see run.sh). TEST names ending in
# _lat are latencies (t_typical, usec, lower is better), in _mpps message rates
# (Mpps, higher is better), the others bandwidths (BW average, Gb/s, higher is
# better).
# Output: the table, every run's value, and the failed runs with their reasons.
# A cell is the median of the runs of its driver that succeeded on a quiet host,
# or, when there are none, of all that succeeded, marked "*"; "n" counts the runs
# in the median. A cell with any failed run shows FAILED (FAILED k/n when k of n
# runs failed) and gets no ratio.

BEGIN { if (tag == "") tag = "BENCH-RUN" }

{
    sub(/\r$/, "")
    i = index($0, tag " ")
    if (!i) next
    n = split(substr($0, i + length(tag) + 1), f, " ")
    if (n < 4) next
    round = f[1]; drv = f[2]; t = f[3]
    if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
    if (!(drv in dseen)) { dseen[drv] = 1; drivers[++nd] = drv }
    key = t SUBSEP drv
    runs[key]++
    if (f[4] == "FAILED") {
        failed[key]++
        reason = ""
        for (j = 5; j <= n; j++) reason = reason " " f[j]
        fails[++nf] = sprintf("  round %s, %s, %s:%s", round, drv, t, reason)
        all[key] = all[key] " FAILED"
    } else {
        ok[key]++
        v = f[4]
        busy = sub(/\*$/, "", v)
        if (!busy) { quiet[key]++; qvals[key, quiet[key]] = v + 0 }
        vals[key, ok[key]] = v + 0
        all[key] = all[key] " " f[4]
        if (busy) nbusy++
    }
}

# median(key): over the quiet runs if any, else over all successful runs.
function median(key,    m, i, j, x) {
    m = quiet[key]
    if (m) for (i = 1; i <= m; i++) srt[i] = qvals[key, i]
    else { m = ok[key]; for (i = 1; i <= m; i++) srt[i] = vals[key, i] }
    for (i = 2; i <= m; i++) {
        x = srt[i]
        for (j = i - 1; j >= 1 && srt[j] > x; j--) srt[j + 1] = srt[j]
        srt[j + 1] = x
    }
    if (m % 2) return srt[(m + 1) / 2]
    return (srt[m / 2] + srt[m / 2 + 1]) / 2
}

# floors(): what the floor_uverbs_lat row bounds. Every iteration of the other latency
# rows (each half round trip of ib_send_lat and ib_write_lat) and every message of
# ib_send_mpps rings one send doorbell, and part of each doorbell is ib_core's, before
# any driver: rrxe_floor's refused doorbell (the lower of the two drivers' medians).
# So no driver behind librxe can take less than that per iteration or message.
function floors(    f, d, k, t, key, m) {
    f = -1
    for (d = 1; d <= nd; d++) {
        key = "floor_uverbs_lat" SUBSEP drivers[d]
        if (!ok[key] || failed[key]) continue
        m = median(key)
        if (f < 0 || m < f) f = m
    }
    if (f <= 0) return
    printf "\nfloor: ib_core's part of a send doorbell takes %.2f us (floor_uverbs_lat); no driver\n" \
        "behind librxe can beat it, so at best, per row, rrxe/rxe would be:\n", f
    for (k = 1; k <= nt; k++) {
        t = order[k]
        if (t ~ /^floor_/) continue
        key = t SUBSEP "rxe"
        if (!ok[key] || failed[key]) continue
        m = median(key)
        if (m <= 0) continue
        if (t ~ /_lat$/) printf "  %-19s >= %.2f  (%.2f us of rxe's %.2f)\n", t, f / m, f, m
        else if (t ~ /_mpps$/)
            printf "  %-19s <= %.2f  (%.4f Mpps against rxe's %.4f)\n", t, 1 / f / m, 1 / f, m
    }
}

# cell(key, lat): the median, "FAILED", "FAILED k/n" or "-" (never run).
function cell(key, lat) {
    if (!runs[key]) return "-"
    if (failed[key] == runs[key]) return "FAILED"
    if (failed[key]) return sprintf("FAILED %d/%d", failed[key], runs[key])
    return sprintf(lat ? "%.2f%s" : "%.4f%s", median(key), quiet[key] ? "" : "*")
}

function used(key) { return !runs[key] || failed[key] ? "-" : quiet[key] ? quiet[key] : ok[key] }

END {
    if (!nt) { print "no benchmark results"; exit 1 }
    printf "%-19s %-15s %12s %12s %9s %7s\n", "test", "metric", "rxe median", "rrxe median", "rrxe/rxe", "n"
    for (k = 1; k <= nt; k++) {
        t = order[k]; lat = (t ~ /_lat$/); mpps = (t ~ /_mpps$/)
        a = cell(t SUBSEP "rxe", lat); b = cell(t SUBSEP "rrxe", lat)
        r = "-"
        if (a ~ /^[0-9.]+\*?$/ && b ~ /^[0-9.]+\*?$/ && median(t SUBSEP "rxe") > 0)
            r = sprintf("%.2f", median(t SUBSEP "rrxe") / median(t SUBSEP "rxe"))
        printf "%-19s %-15s %12s %12s %9s %7s  %s\n", t, lat ? "t_typical [us]" : mpps ? "rate [Mpps]" : "BW avg [Gb/s]",
            a, b, r, used(t SUBSEP "rxe") "/" used(t SUBSEP "rrxe"),
            lat ? "(lower is better)" : "(higher is better)"
    }
    floors()
    if (nbusy)
        printf "\n%d runs (marked *) overlapped other CPU load on the host; medians leave them out\n" \
            "where a driver has quiet runs of that test.\n", nbusy
    print ""
    print "runs (in round order):"
    for (k = 1; k <= nt; k++)
        for (d = 1; d <= nd; d++)
            if (runs[order[k] SUBSEP drivers[d]])
                printf "  %-19s %-5s%s\n", order[k], drivers[d], all[order[k] SUBSEP drivers[d]]
    if (nf) {
        print ""
        print "failed runs:"
        for (k = 1; k <= nf; k++) print fails[k]
    }
}
