#!/bin/sh
# Benchmark (not a test): ib_write_bw over the wire between two guests, upstream
# rdma_rxe on both (rxe0) against rrxe on both (rrxe0), in one boot of the pair. R
# rounds alternate the order of the drivers as perftest_compare.sh does; in each slot
# both guests load the same driver, guest B serves and guest A is the client (it
# retries until B's server listens). A new TCP port per slot keeps a client from
# reaching the previous slot's server. Guest A prints the results as
# perftest_compare.sh does ("BENCH-RUN ROUND DRIVER wire_write_bw VALUE|FAILED").
#
# Kernel command line (tools/bench/run.sh sets it for both guests):
#   rrxe.bench.rounds=R   rounds (default 6)
#   rrxe.bench.bw_iters=N iterations (default 1000; 64 KiB each, 2 in flight, as
#                         rxe_pair_write_bw: a deeper queue overflows the host's UDP
#                         buffer between the two emulated guests)
#   rrxe.bench.warmup=0|1 an uncounted first slot per driver (default 1)
#   rrxe.bench.profile=1  record a system-wide perf profile (cpu-clock) of each guest
#                         during each run and print its top symbols as
#                         "BENCH-PROFILE DRIVER wire_write_bw_sender|_receiver ..."
#                         lines (A sends, B receives; tools/bench/run.sh --profile)
# topology: pair
# timeout: 1800
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/rounds.sh"

ROUNDS=6
BW_ITERS=1000
WARMUP=1
PROFILE=0
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        rrxe.bench.rounds=*) ROUNDS=${arg#*=} ;;
        rrxe.bench.bw_iters=*) BW_ITERS=${arg#*=} ;;
        rrxe.bench.warmup=*) WARMUP=${arg#*=} ;;
        rrxe.bench.profile=*) PROFILE=${arg#*=} ;;
    esac
done
T=wire_write_bw
PORT=18700

record() {  # ROUND DRIVER VALUE|FAILED [REASON...]
    [ "$RRXE_ROLE" = a ] || return 0
    local round=$1 drv=$2
    shift 2
    if [ "$round" = 0 ]; then echo "BENCH-WARMUP $round $drv $T $*"; else echo "BENCH-RUN $round $drv $T $*" | tee -a /tmp/bench.results; fi
}

# slot ROUND DRIVER: load DRIVER on this guest, run this guest's side, unload it.
slot() {
    local round=$1 drv=$2 dev gid a rc v mod
    case "$drv" in
        rxe) dev=rxe0 mod=rdma_rxe ;;
        rrxe) dev=rrxe0 mod=rrxe ;;
    esac
    PORT=$((PORT + 1))
    if ! ( if [ "$drv" = rxe ]; then load_rxe "$dev"; else load_rrxe "$dev"; fi ) ||
        ! gid=$(gid_index "$dev" ipv4); then
        record "$round" "$drv" FAILED "loading $drv or finding its GID failed"
    else
        a="-d $dev -x $gid -F -p $PORT -s 65536 -n $BW_ITERS -t 2 --report_gbits"
        # The whole guest's profile while this side runs (both sides, each its own).
        if [ "$PROFILE" = 1 ]; then
            $PERF record -q -a -e cpu-clock -F 4000 -o /tmp/wire.perf > /tmp/wire.perf.log 2>&1 &
            perf_pid=$!
        fi
        if [ "$RRXE_ROLE" = b ]; then
            # shellcheck disable=SC2086
            timeout 240 ib_write_bw $a > "/tmp/wire-$drv-r$round.out" 2>&1
        else
            # shellcheck disable=SC2086
            retry_connect 120 "wire-$drv-r$round" timeout 180 ib_write_bw $a "$RRXE_PEER_IP4" > /dev/null
            rc=$?
            if [ $rc = 0 ] && v=$(awk '/#bytes/ { hdr = 1; next }
                    hdr && NF >= 5 && $1 ~ /^[0-9]+$/ && $5 ~ /^[0-9.]+$/ && $5 > 0 {
                        printf "%.6f\n", $5 * $1 * 8 / 1000; ok = 1; exit }
                    END { exit !ok }' "/tmp/wire-$drv-r$round.out"); then
                record "$round" "$drv" "$v"
            else
                record "$round" "$drv" FAILED "client rc=$rc"
                tail -n 20 "/tmp/wire-$drv-r$round.out" | sed "s/^/  $T-client| /"
            fi
        fi
        if [ "$PROFILE" = 1 ]; then
            kill -INT "$perf_pid" 2>/dev/null
            wait "$perf_pid"
            side=sender
            [ "$RRXE_ROLE" = b ] && side=receiver
            sed "s/^/  perf| /" /tmp/wire.perf.log
            profile "$drv" "${T}_$side" /tmp/wire.perf
            rm -f /tmp/wire.perf /tmp/wire.perf.log
        fi
    fi
    # Retransmissions, sequence errors, drops: what the emulated wire lost.
    show_counters "$dev" | sed "s/^ */  $T-$drv-r$round-counters| /"
    [ -e "/sys/class/infiniband/$dev" ] && timeout 30 rdma link delete "$dev"
    grep -q "^$mod " /proc/modules && timeout 30 rmmod "$mod"
    return 0
}

wait_for_peer_ping 60
: > /tmp/bench.results
bench_rounds
[ "$RRXE_ROLE" = a ] && sed 's/^BENCH-RUN /BENCH-FINAL /' /tmp/bench.results
exit 0
