#!/usr/bin/env bash
# `make bench`: compare rrxe with upstream rdma_rxe in one QEMU boot and print the
# table of medians and rrxe/rxe ratios. A benchmark, not a test: not part of
# `make check`. Builds what is missing (kernel, rrxe.ko, base initramfs) like the test
# runner, boots one guest (--smp 2, -nic none) running
# tools/bench/guest/perftest_compare.sh and reads its results from the console log.
#
# Then (unless --no-pair) it boots two guests linked by their emulated wire and runs
# tools/bench/guest/perftest_pair.sh: ib_write_bw from one guest to the other, rxe on
# both against rrxe on both (row wire_write_bw).
#
# usage: tools/bench/run.sh [--rounds R] [--tests LIST] [--lat-iters N] [--bw-iters N]
#                           [--no-warmup] [--no-pair] [--wait-quiet SEC] [--timeout SEC]
#                           [--log-dir DIR]
#   --rounds R      rounds, each running every perftest over both drivers, the
#                   order alternating (rxe,rrxe | rrxe,rxe | ...); default 6
#   --tests LIST    comma-separated subset of ib_send_lat,ib_write_lat,ib_read_lat,
#                   ib_atomic_lat,ib_send_idle1k_lat,ib_write_bw,ib_read_bw,ib_send_bw,
#                   ib_write_bw_q8,ib_send_mpps,floor_uverbs_lat,floor_doorbell_lat
#                   (default: all; see tools/bench/guest/perftest_compare.sh for what
#                   each runs)
#   --no-pair       skip the two-guest run
#   --profile       record a perf profile (cpu-clock, whole guest) of every client run,
#                   and of both guests of every wire run (the sender and the
#                   receiver), and print each one's top symbols and DSOs after the
#                   table (perf and its libraries are copied from the host's
#                   linux-perf). Profiling slows the runs: use it to see where the
#                   time goes, not for the ratios
#   --lat-iters N   iterations of the latency tests (default 2000)
#   --bw-iters N    iterations of the bandwidth tests (default 1000)
#   --no-warmup     skip the uncounted warm-up slot of each driver
#   --wait-quiet SEC  before booting, wait up to SEC seconds for 10 quiet seconds
#                   in a row (host CPU use below RRXE_BENCH_BUSY_CPUS, default 0.25)
#   --timeout SEC   hard limit for the boot (default 300 + 120 per round)
#   --log-dir DIR   logs (default $RRXE_OUT/bench/DATE; $RRXE_OUT/bench/latest links
#                   to the last run); the table is also written to DIR/table.txt, the
#                   hw_counters each run changed (retransmissions, RNR NAKs, drops)
#                   to DIR/counters.txt
# Exit status 0 when the guest ran every slot without a kernel splat and no perftest
# failed; 1 otherwise (the table is printed in every case, FAILED where a run failed).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export RRXE_OUT=${RRXE_OUT:-$repo/out}
export PATH="$HOME/.cargo/bin:$PATH"

die() { printf 'bench: ERROR: %s\n' "$*" >&2; exit 2; }

rounds=6 tests= lat_iters= bw_iters= warmup=1 wait_quiet=0 timeout= log_dir= pair=1 profile=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --lat-iters) lat_iters=$2; shift 2 ;;
        --bw-iters) bw_iters=$2; shift 2 ;;
        --no-warmup) warmup=0; shift ;;
        --no-pair) pair=0; shift ;;
        --profile) profile=1; shift ;;
        --wait-quiet) wait_quiet=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --log-dir) log_dir=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds wants a positive number"
[[ $wait_quiet =~ ^[0-9]+$ ]] || die "--wait-quiet wants seconds"
busy_cpus=${RRXE_BENCH_BUSY_CPUS:-0.25}
[ -n "$timeout" ] || timeout=$((300 + 120 * rounds))
# tsc=reliable: no clocksource watchdog. Under TCG it otherwise marks the TSC unstable
# at a random point of the run (a 0.1 % "skew") and the kernel falls back to the
# emulated HPET, whose every read is an MMIO exit: a step change in the middle of
# the measurements. perftest times with the TSC itself.
append="tsc=reliable rrxe.bench.rounds=$rounds rrxe.bench.warmup=$warmup"
[ -n "$tests" ] && append+=" rrxe.bench.tests=$tests"
[ -n "$lat_iters" ] && append+=" rrxe.bench.lat_iters=$lat_iters"
[ -n "$bw_iters" ] && append+=" rrxe.bench.bw_iters=$bw_iters"

# perf and its libraries for the guest (--profile).
perf_add=()
if [ $profile = 1 ]; then
    . "$here/perf_guest.sh"
    append+=" rrxe.bench.profile=1"
fi

start=$(date +%s)
kdir=$("$repo/tools/kernel/build.sh" normal) || die "kernel build failed"
ko=$("$repo/tools/module.sh" normal) || die "rrxe.ko build failed"
# What the module was built from (tools/module.sh copies the working tree).
src_id=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$repo" status --porcelain -- drivers rust Kbuild 2>/dev/null)" ] ||
    src_id+=" + uncommitted changes in drivers/ rust/"
"$repo/tools/initramfs/build.sh" >/dev/null || die "initramfs build failed"
"$repo/tools/testing/verbs/build.sh" || die "building the guest programs failed"
echo "bench: built in $(( $(date +%s) - start ))s; booting one guest (--smp 2) for $rounds rounds" >&2

# host_busy_jiffies: busy jiffies of all host CPUs since boot.
host_busy_jiffies() {
    local u n sy irq sirq st
    read -r _ u n sy _ _ irq sirq st _ < /proc/stat
    echo $((u + n + sy + irq + sirq + st))
}
if [ "$wait_quiet" -gt 0 ]; then
    echo "bench: waiting up to ${wait_quiet}s for 10 quiet seconds on the host" >&2
    quiet=0 waited=0
    while [ $quiet -lt 10 ] && [ $waited -lt "$wait_quiet" ]; do
        b0=$(host_busy_jiffies); sleep 1; b1=$(host_busy_jiffies)
        waited=$((waited + 1))
        if awk -v d=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" -v l="$busy_cpus" 'BEGIN { exit !(d / hz < l) }'; then
            quiet=$((quiet + 1))
        else
            quiet=0
        fi
    done
    [ $quiet -ge 10 ] || echo "bench: the host stayed busy for ${wait_quiet}s; running anyway" >&2
fi

stamp=$(date +%Y%m%d-%H%M%S)
[ -n "$log_dir" ] || log_dir=$RRXE_OUT/bench/$stamp
rm -rf "$log_dir"
mkdir -p "$log_dir"
log_dir=$(cd "$log_dir" && pwd)
case "$log_dir" in
    "$RRXE_OUT"/bench/*) ln -sfn "$log_dir" "$RRXE_OUT/bench/latest" ;;
esac

# Other work on this host takes CPU from our guest's two busy-polling vCPUs: with one
# core taken, a latency run jumps from ~60 us to ~1 ms. Once a second, record the
# host's busy jiffies and our QEMU's (host-load.txt: "UPTIME BUSY QEMU"; "QEMU-START
# UPTIME" when it is found), to mark the runs that overlapped other load.
find_qemu() {
    local p
    for p in $(pgrep qemu-system 2>/dev/null); do
        if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF "$log_dir/"; then
            echo "$p"; return
        fi
    done
}
sampler() {  # only shell builtins in the loop, so that it hardly loads the host itself
    local qpid= line rest up busy q hz
    hz=$(getconf CLK_TCK)
    while :; do
        if [ -z "$qpid" ]; then
            qpid=$(find_qemu)
            if [ -n "$qpid" ] && read -r line < "/proc/$qpid/stat"; then
                rest=${line##*) }; set -- $rest
                echo "QEMU-START $(( ${20} / hz )).$(( ${20} % hz * 100 / hz ))"
            fi
        fi
        read -r up _ < /proc/uptime
        read -r _ u n sy _ _ irq sirq st _ < /proc/stat
        busy=$((u + n + sy + irq + sirq + st)) q=0
        if [ -n "$qpid" ] && read -r line < "/proc/$qpid/stat" 2>/dev/null; then
            rest=${line##*) }; set -- $rest; q=$(( ${12} + ${13} ))
        fi
        echo "$up $busy $q"
        sleep 1
    done >> "$log_dir/host-load.txt"
}
: > "$log_dir/host-load.txt"
sampler &
sampler_pid=$!
trap 'kill $sampler_pid 2>/dev/null' EXIT
t0=$(date +%s)
verdict=$("$repo/tools/qemu/run.sh" --kernel "$kdir" --ko "$ko" --smp 2 ${perf_add[@]+"${perf_add[@]}"} \
    --tests "$here/guest" --test perftest_compare --append "$append" \
    --timeout "$timeout" --log-dir "$log_dir" 2> "$log_dir/run.stderr" | tail -1)
secs=$(( $(date +%s) - t0 ))
kill $sampler_pid 2>/dev/null
glog=$log_dir/guest-a.log

# The two-guest run over the emulated wire (its runs are not marked busy: the
# other guest's CPU use would count as other load).
pair_verdict=PASS pair_secs=0
if [ $pair = 1 ]; then
    echo "bench: booting two guests for the wire row" >&2
    t1=$(date +%s)
    pair_verdict=$("$repo/tools/qemu/run.sh" --pair --kernel "$kdir" --ko "$ko" --smp 1 ${perf_add[@]+"${perf_add[@]}"} \
        --tests "$here/guest" --test perftest_pair --append "$append" \
        --timeout "$timeout" --log-dir "$log_dir/pair" 2> "$log_dir/pair.stderr" | tail -1)
    pair_secs=$(( $(date +%s) - t1 ))
fi

# The final copy of the results if the guest got that far, else whatever runs finished.
tag=BENCH-FINAL
tr -d '\r' < "$glog" | grep -aq '^BENCH-FINAL ' || tag=BENCH-RUN

# Load from others: per sample, CPUs used by everything but our QEMU over the last
# second. A run (BENCH-SPAN, guest uptime; the guest's clock starts with QEMU, +1 s
# margins) is "busy" when that exceeded BUSY_CPUS in any second it overlapped; its
# value gets a "*" and table.awk leaves it out of the medians where it can. The spans
# with their worst load are kept in spans.txt.
tr -d '\r' < "$glog" | awk -v tag="$tag" -v hz="$(getconf CLK_TCK)" -v limit="$busy_cpus" -v spans="$log_dir/spans.txt" '
    FNR == NR {
        if ($1 == "QEMU-START") { qs = $2; next }
        if (np && $1 > pt[np]) { other[np + 1] = (($2 - pb) - ($3 - pq)) / hz / ($1 - pt[np]) }
        else if (np) next
        np++; pt[np] = $1; pb = $2; pq = $3
        next
    }
    /^BENCH-SPAN / {
        worst = -1
        if (qs != "") for (i = 2; i <= np; i++)
            if (pt[i] > qs + $5 - 1 && pt[i - 1] < qs + $6 + 1 && other[i] > worst) worst = other[i]
        load[$2 " " $3 " " $4] = worst
        printf "%s %s %s %.1f-%.1f s: other load %s CPUs\n", $2, $3, $4, $5, $6,
            worst < 0 ? "unknown" : sprintf("%.2f", worst) > spans
        next
    }
    index($0, tag " ") == 1 {
        k = $2 " " $3 " " $4
        if ($5 != "FAILED" && (k in load) && load[k] > limit) sub(/ [^ ]+$/, " " $5 "*")
        print
    }' "$log_dir/host-load.txt" - > "$log_dir/results.txt"
if [ $pair = 1 ] && [ -f "$log_dir/pair/guest-a.log" ]; then
    ptag=BENCH-FINAL
    tr -d '\r' < "$log_dir/pair/guest-a.log" | grep -aq '^BENCH-FINAL ' || ptag=BENCH-RUN
    tr -d '\r' < "$log_dir/pair/guest-a.log" | grep -a "^$ptag " | sed "s/^$ptag /$tag /" >> "$log_dir/results.txt"
fi
table=$(awk -v tag=$tag -f "$here/table.awk" "$log_dir/results.txt")
# The hw_counters each one-guest run changed (retransmissions, RNR NAKs, drops), one
# line per run (the two-guest runs print theirs in their consoles).
tr -d '\r' < "$glog" | sed -n 's/^BENCH-COUNTERS //p' > "$log_dir/counters.txt"
host=$(awk -v hz="$(getconf CLK_TCK)" -v limit="$busy_cpus" '
    $1 == "QEMU-START" { on = 1; next }
    on && n && $1 > t { o = (($2 - b) - ($3 - q)) / hz / ($1 - t); s++; if (o > limit) busy++; if (o > max) max = o }
    { n++; t = $1; b = $2; q = $3 }
    END { printf "other load above %s CPUs in %d of %d seconds of the boot, at most %.2f CPUs", limit, busy, s, max }' \
    "$log_dir/host-load.txt")

# Each failed run: the guest's lines after it (perftest output, kernel messages).
details=$(tr -d '\r' < "$glog" | awk '
    /BENCH-RUN [0-9]+ [a-z]+ [a-z_]+ FAILED/ { if ($0 ~ /skipped:|not run:/) next; on = 1; n = 0; print; next }
    on && (/^BENCH-/ || /\] round [0-9]+ /) { on = 0 }
    on && n++ < 70 { print "    " $0 }')

{
    echo "rrxe vs rxe, perftest in one guest (QEMU TCG, --smp 2), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "$(tr -d '\r' < "$glog" | grep -a -m1 '^BENCH-CONFIG' || echo 'BENCH-CONFIG (not reached)')"
    echo "$(tr -d '\r' < "$glog" | grep -a -m1 '^BENCH-ELAPSED' || echo 'BENCH-ELAPSED (not reached)'), boot ${secs}s, pair boot ${pair_secs}s"
    echo "kernel $(sed -n 's/^version=//p' "$kdir/rrxe-kernel.info" 2>/dev/null) ($(basename "$kdir")), rrxe.ko of $src_id"
    echo "guest clocksource: $(tr -d '\r' < "$glog" | sed -n 's/^BENCH-CLOCK //p' | tr '\n' ' ')"
    echo "host ($(nproc) CPUs): $host"
    echo
    echo "$table"
} > "$log_dir/table.txt"
cat "$log_dir/table.txt"
if [ -n "$details" ]; then
    echo
    echo "guest output of the failed runs ($glog):"
    echo "$details"
fi
if [ $profile = 1 ]; then
    echo
    echo "profiles (perf cpu-clock, whole guest, per client run; % of samples):"
    for g in "$glog" "$log_dir/pair/guest-a.log" "$log_dir/pair/guest-b.log"; do
        [ -f "$g" ] && tr -d '\r' < "$g" | sed -n 's/^BENCH-PROFILE //p'
    done | tee "$log_dir/profile.txt"
fi
echo
echo "log: $log_dir (each run's counters: $log_dir/counters.txt)"
status=0
if [ "${verdict%% *}" != PASS ]; then
    grep -v -e '^qemu: guest . reached' -e '^initramfs: cached' -e '^kernel: cached' \
        "$log_dir/run.stderr" | sed 's/^/    /' | head -20
    echo "bench: the guest run failed: ${verdict:-no verdict from tools/qemu/run.sh}"
    status=1
fi
if [ "${pair_verdict%% *}" != PASS ]; then
    echo "bench: the two-guest run failed: ${pair_verdict:-no verdict} (log: $log_dir/pair)"
    status=1
fi
if printf '%s\n' "$table" | grep -q FAILED; then
    echo "bench: some perftests FAILED (see the table and the guest output above)"
    status=1
fi
exit $status
