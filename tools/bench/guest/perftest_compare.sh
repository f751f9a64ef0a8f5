#!/bin/sh
# Benchmark (not a test): a fixed perftest set over upstream rdma_rxe (rxe0) and over
# rrxe (rrxe0) in this one boot, server and client on this guest over the device's
# RoCE v2 IPv4 GID, TCP rendezvous on 192.0.2.1. R rounds alternate the order of the
# drivers (rxe,rrxe | rrxe,rxe | ...) to cancel drift; only one driver is loaded at
# a time (they share the driver id), each slot loads it, runs every perftest and
# unloads it. A perftest that fails is recorded as FAILED and the run goes on; after
# two failures of one perftest on one driver its later rounds are skipped (and count
# as FAILED), so a broken datapath cannot stretch the run by a timeout per round.
#
# Kernel command line (tools/bench/run.sh sets them):
#   rrxe.bench.rounds=R        rounds (default 6)
#   rrxe.bench.tests=A,B,...   subset of the perftests below, by name
#   rrxe.bench.lat_iters=N     iterations of the latency tests (default 2000)
#   rrxe.bench.bw_iters=N      iterations of the bandwidth tests (default 1000)
#   rrxe.bench.warmup=0|1      first one uncounted slot per driver (round 0; default 1):
#                              first loads, first runs of each binary
#   rrxe.bench.profile=1       record a system-wide perf profile (cpu-clock) of every
#                              client run and print its top symbols and DSOs as
#                              "BENCH-PROFILE DRIVER TEST ..." lines (tools/bench/run.sh
#                              --profile adds perf under /rrxe/perf)
# Output: one "BENCH-RUN ROUND DRIVER TEST VALUE|FAILED REASON" line per run as it
# finishes (BENCH-WARMUP for round 0, not counted), preceded by
# "BENCH-SPAN ROUND DRIVER TEST START END" (guest uptime, seconds) and
# "BENCH-COUNTERS ROUND DRIVER TEST NAME=DELTA ..." (the device's hw_counters that the
# run changed: retransmissions, RNR NAKs, drops), then all results
# again as "BENCH-FINAL ..."; tools/bench/run.sh makes the table (tools/bench/table.awk).
# Exits 0 when every slot ran, whatever the perftests did.
# topology: single
# timeout: 900
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/rounds.sh"

ROUNDS=6
TESTS="ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_send_idle1k_lat ib_write_bw ib_read_bw ib_send_bw ib_write_bw_q8 ib_send_mpps floor_uverbs_lat floor_doorbell_lat"
LAT_ITERS=2000
BW_ITERS=1000
WARMUP=1
PROFILE=0
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        rrxe.bench.rounds=*) ROUNDS=${arg#*=} ;;
        rrxe.bench.tests=*) TESTS=$(echo "${arg#*=}" | tr ',' ' ') ;;
        rrxe.bench.lat_iters=*) LAT_ITERS=${arg#*=} ;;
        rrxe.bench.bw_iters=*) BW_ITERS=${arg#*=} ;;
        rrxe.bench.warmup=*) WARMUP=${arg#*=} ;;
        rrxe.bench.profile=*) PROFILE=${arg#*=} ;;
    esac
done
# Per-run bounds (seconds): a client that never completes fails in bounded time.
# The slowest run seen (ib_send_bw on rrxe, 64 MiB at 0.06 Gb/s) takes about 9 s.
CLIENT_TMO=60
SERVER_TMO=80
MAX_FAILS=2
RESULTS=/tmp/bench.results
: > "$RESULTS"
PORT=18600
STUCK=

record() {  # ROUND DRIVER TEST VALUE|FAILED [REASON...]
    if [ "$1" = 0 ]; then echo "BENCH-WARMUP $*"; else echo "BENCH-RUN $*" | tee -a "$RESULTS"; fi
}

# The perftests, by name (a name ending in _lat is a latency, _mpps a message rate,
# anything else a bandwidth):
#   ib_send_lat, ib_write_lat, ib_read_lat   2-byte messages, t_typical
#   ib_atomic_lat                            fetch-and-add, t_typical
#   ib_send_idle1k_lat                       ib_send_lat while 1000 idle RC QPs exist
#   ib_write_bw, ib_read_bw, ib_send_bw      64 KiB messages, Gb/s
#   ib_write_bw_q8                           ib_write_bw over 8 QPs at once, Gb/s
#   ib_send_mpps                             ib_send_bw of 64-byte messages, Mpps
#   floor_uverbs_lat, floor_doorbell_lat     not perftests: rrxe_floor's iterations of
#                                            a send doorbell that ib_core refuses (no
#                                            such QP) and of one the driver finds
#                                            nothing to do for, t_typical (usec)
# bin TEST: the perftest binary of TEST.
bin() {
    case "$1" in
        ib_send_idle1k_lat) echo ib_send_lat ;;
        ib_send_mpps) echo ib_send_bw ;;
        ib_write_bw_q8) echo ib_write_bw ;;
        *) echo "$1" ;;
    esac
}

# args TEST: perftest arguments of TEST (message size, iterations, units).
args() {
    case "$1" in
        ib_send_lat|ib_write_lat|ib_read_lat|ib_send_idle1k_lat) echo "-s 2 -n $LAT_ITERS" ;;
        ib_atomic_lat) echo "-n $LAT_ITERS" ;;
        ib_write_bw|ib_read_bw|ib_send_bw) echo "-s 65536 -n $BW_ITERS --report_gbits" ;;
        ib_write_bw_q8) echo "-q 8 -s 65536 -n $BW_ITERS --report_gbits" ;;
        ib_send_mpps) echo "-s 64 -n $((BW_ITERS * 20))" ;;
        *) return 1 ;;
    esac
}

# value TEST FILE: the result of a perftest report: t_typical (usec) for latency, the
# message rate (Mpps) for _mpps, the BW average in Gb/s for bandwidth. perftest prints
# the BW average with two decimals only (0.10 at these speeds), so it is computed from
# the MsgRate column (Mpps, six decimals) as MsgRate * bytes * 8 / 1000, which is how
# perftest derives both.
value() {
    awk -v kind="$(case "$1" in *_lat) echo lat ;; *_mpps) echo mpps ;; *) echo bw ;; esac)" '
        /#bytes/ { hdr = 1; next }
        hdr && NF >= 5 && $1 ~ /^[0-9]+$/ {
            v = kind == "bw" ? $5 * $1 * 8 / 1000 : $5
            if ($5 !~ /^[0-9.]+$/ || v <= 0) { print "bad result row: " $0; exit 1 }
            printf(kind == "lat" ? "%.2f\n" : "%.6f\n", v); found = 1; exit 0
        }
        END { if (!found) exit 1 }' "$2"
}

# counter_deltas BEFORE AFTER: "NAME=DELTA" for each counter that changed, on one
# line; BEFORE and AFTER are outputs of `counters DEV` (the guest library's).
counter_deltas() {
    awk 'NR == FNR { v[$1] = $2; next }
         ($1 in v) && $2 != v[$1] { printf("%s%s=%.0f", sep, $1, $2 - v[$1]); sep = " " }
         END { print "" }' "$1" "$2"
}

# show OUTFILE LABEL: the last lines of a perftest's output, prefixed.
show() { tail -n 25 "$1" | sed "s/^/  $2| /"; }

# idle_qps_start DEV GID N: N idle RC QPs on DEV in the background (IDLE_PID), waiting
# until they are up; idle_qps_stop ends them.
IDLE_PID=
idle_qps_start() {
    rrxe_idle_qps -d "$1" -g "$2" -n "$3" > /tmp/idle-qps.out 2>&1 &
    IDLE_PID=$!
    wait_for 120 grep -q '^ready' /tmp/idle-qps.out || { cat /tmp/idle-qps.out; return 1; }
}
idle_qps_stop() {
    [ -n "$IDLE_PID" ] || return 0
    kill "$IDLE_PID" 2>/dev/null; wait "$IDLE_PID" 2>/dev/null; IDLE_PID=
}

# run_one ROUND DRIVER DEV GID TEST: one perftest, server and client, or one
# rrxe_floor mode, recorded; skipped once it has failed MAX_FAILS times on DRIVER.
run_one() {
    local round=$1 drv=$2 dev=$3 gid=$4 t=$5 a b srv crc=0 src=0 out reason= v n t0 t1
    if [ "$(grep -c "^BENCH-RUN [0-9]* $drv $t FAILED" "$RESULTS")" -ge $MAX_FAILS ]; then
        record "$round" "$drv" "$t" FAILED "skipped: failed $MAX_FAILS times already"
        return
    fi
    case "$t" in floor_*) run_floor "$round" "$drv" "$dev" "$gid" "$t"; return ;; esac
    a=$(args "$t") || { record "$round" "$drv" "$t" FAILED "unknown perftest $t"; return; }
    b=$(bin "$t")
    if [ "$t" = ib_send_idle1k_lat ] && ! idle_qps_start "$dev" "$gid" 1000; then
        idle_qps_stop
        record "$round" "$drv" "$t" FAILED "could not create 1000 idle QPs"
        return
    fi
    run_perftest "$round" "$drv" "$dev" "$gid" "$t" "$b" "$a"
    idle_qps_stop
}

# run_floor ROUND DRIVER DEV GID TEST: one rrxe_floor mode (floor_MODE_lat), recorded.
run_floor() {
    local round=$1 drv=$2 dev=$3 gid=$4 t=$5 mode out t0 t1 v
    mode=${t#floor_}; mode=${mode%_lat}
    out=/tmp/$t-$drv-r$round
    log "round $round $drv: rrxe_floor -d $dev -g $gid -n $LAT_ITERS -m $mode"
    read -r t0 _ < /proc/uptime
    timeout $CLIENT_TMO rrxe_floor -d "$dev" -g "$gid" -n "$LAT_ITERS" -m "$mode" > "$out.out" 2>&1
    local rc=$?
    read -r t1 _ < /proc/uptime
    echo "BENCH-SPAN $round $drv $t $t0 $t1"
    v=$(sed -n "s/^$mode t_typical_us=\([0-9.]*\) .*/\1/p" "$out.out")
    if [ $rc = 0 ] && [ -n "$v" ]; then
        record "$round" "$drv" "$t" "$v"
    else
        record "$round" "$drv" "$t" FAILED "rrxe_floor rc=$rc: $(tail -n 1 "$out.out")"
    fi
}

# run_perftest ROUND DRIVER DEV GID TEST BINARY ARGS: one perftest run, recorded.
run_perftest() {
    local round=$1 drv=$2 dev=$3 gid=$4 t=$5 b=$6 a=$7 srv crc=0 src=0 out reason= v n t0 t1
    PORT=$((PORT + 1))
    out=/tmp/$t-$drv-r$round
    log "round $round $drv: $b -d $dev -x $gid -F -p $PORT $a"
    counters "$dev" > "$out.counters0"
    read -r t0 _ < /proc/uptime
    # shellcheck disable=SC2086  # $a is a word list
    timeout $SERVER_TMO "$b" -d "$dev" -x "$gid" -F -p $PORT $a > "$out-server.out" 2>&1 &
    srv=$!
    if wait_for 30 port_listening $PORT; then
        if [ "$PROFILE" = 1 ]; then
            # shellcheck disable=SC2086
            $PERF record -q -a -e cpu-clock -F 4000 -o "$out.perf" -- \
                timeout $CLIENT_TMO "$b" -d "$dev" -x "$gid" -F -p $PORT $a "$RRXE_IP4" > "$out-client.out" 2>&1
            crc=$?
            profile "$drv" "$t" "$out.perf"
            rm -f "$out.perf"
        else
            # shellcheck disable=SC2086
            timeout $CLIENT_TMO "$b" -d "$dev" -x "$gid" -F -p $PORT $a "$RRXE_IP4" > "$out-client.out" 2>&1
            crc=$?
        fi
    else
        reason="server did not listen on TCP port $PORT within 30 s"
    fi
    # The server ends with the client; give it 20 s, then stop it.
    n=0
    while kill -0 "$srv" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.2; n=$((n + 1)); done
    if kill -0 "$srv" 2>/dev/null; then
        kill "$srv" 2>/dev/null; sleep 0.5; kill -9 "$srv" 2>/dev/null
        [ -n "$reason" ] || reason="server still running 20 s after the client ended (killed)"
    fi
    wait "$srv"; src=$?
    read -r t1 _ < /proc/uptime
    echo "BENCH-SPAN $round $drv $t $t0 $t1"
    counters "$dev" > "$out.counters1"
    echo "BENCH-COUNTERS $round $drv $t $(counter_deltas "$out.counters0" "$out.counters1")"
    rm -f "$out.counters0" "$out.counters1"
    if [ -z "$reason" ] && [ $crc != 0 ]; then
        reason="client rc=$crc"
        case $crc in 124|143) reason="$reason (killed by timeout after ${CLIENT_TMO}s)" ;; esac
    fi
    if [ -z "$reason" ] && [ $src != 0 ]; then
        reason="server rc=$src"
    fi
    if [ -z "$reason" ] && grep -q "Can't produce a report" "$out-client.out"; then
        reason="Can't produce a report"
    fi
    if [ -z "$reason" ]; then
        if v=$(value "$t" "$out-client.out"); then
            record "$round" "$drv" "$t" "$v"
            return
        fi
        reason="no usable result row${v:+: $v}"
    fi
    record "$round" "$drv" "$t" FAILED "$reason"
    show "$out-client.out" "$t-client"
    show "$out-server.out" "$t-server"
    show_counters "$dev"
}

# slot ROUND DRIVER: load DRIVER, run every perftest, unload it.
slot() {
    local round=$1 drv=$2 dev mod gid t0 t
    case "$drv" in
        rxe) dev=rxe0 mod=rdma_rxe ;;
        rrxe) dev=rrxe0 mod=rrxe ;;
    esac
    t0=$(date +%s)
    echo "BENCH-SLOT round $round $drv: start"
    if [ -n "$STUCK" ]; then
        for t in $TESTS; do record "$round" "$drv" "$t" FAILED "not run: $STUCK could not be unloaded"; done
        return
    fi
    # load_rxe/load_rrxe end the script on failure: run them in a subshell.
    if ! ( if [ "$drv" = rxe ]; then load_rxe "$dev"; else load_rrxe "$dev"; fi ) ||
        ! gid=$(gid_index "$dev" ipv4); then
        for t in $TESTS; do record "$round" "$drv" "$t" FAILED "loading $drv or finding its RoCE v2 IPv4 GID failed"; done
    else
        for t in $TESTS; do run_one "$round" "$drv" "$dev" "$gid" "$t"; done
    fi
    if [ -e "/sys/class/infiniband/$dev" ]; then
        timeout 30 rdma link delete "$dev" || log "rdma link delete $dev failed (rc=$?)"
    fi
    if grep -q "^$mod " /proc/modules; then
        timeout 30 rmmod "$mod" || log "rmmod $mod failed (rc=$?)"
    fi
    if grep -q "^$mod " /proc/modules; then
        log "$mod is still loaded: the other driver must not be loaded next to it"
        STUCK=$mod
    fi
    echo "BENCH-SLOT round $round $drv: done in $(( $(date +%s) - t0 ))s"
}

start=$(date +%s)
echo "BENCH-CONFIG rounds=$ROUNDS tests=$(echo $TESTS | tr ' ' ',') lat_iters=$LAT_ITERS bw_iters=$BW_ITERS warmup=$WARMUP"
echo "BENCH-CLOCK $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
bench_rounds
echo "BENCH-ELAPSED $(( $(date +%s) - start ))s"
echo "BENCH-CLOCK $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
sed 's/^BENCH-RUN /BENCH-FINAL /' "$RESULTS"
exit 0
