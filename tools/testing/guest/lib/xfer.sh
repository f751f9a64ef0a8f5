# Helpers for the tests built on rrxe_xfer (tools/testing/verbs/rrxe_xfer): verified
# transfers over a lossy link, and teardown under load. Source after common.sh:
#     . "$RRXE_LIB"; . "${RRXE_LIB%/*}/xfer.sh"
# Sizes and the link's impairments come from the kernel command line (kernel_arg), so
# `make check` runs a small size and a full run is one option away, e.g.
#     tools/testing/run.sh --append rrxe.xfer_bytes=64M rrxe_pair_lossy

# netem's impairments, commas for spaces (rrxe.netem=): each direction of the link
# loses, delays, reorders, duplicates and corrupts packets. No delay jitter: jitter as
# large as the gap between packets reorders nearly every burst, and go-back-N RC
# (rxe and rrxe) then crawls (rxe: 0.015 MB/s with "delay 1ms 500us").
XFER_NETEM_DEFAULT=loss,10%,delay,1ms,reorder,5%,50%,duplicate,1%,corrupt,1%

# netem_on: put a netem qdisc with rrxe.netem='s impairments on eth0's egress and check
# that tc reads back every impairment asked for.
netem_on() {
    local p k
    p=$(kernel_arg rrxe.netem "$XFER_NETEM_DEFAULT" | tr , ' ')
    # Built into the test kernels; a module elsewhere.
    modprobe sch_netem 2>/dev/null || log "modprobe sch_netem failed (netem built in?)"
    run tc qdisc add dev "$RRXE_NETDEV" root netem $p
    tc qdisc show dev "$RRXE_NETDEV" > /tmp/qdisc.txt
    log "qdisc: $(cat /tmp/qdisc.txt)"
    grep -q 'qdisc netem' /tmp/qdisc.txt || fail "no netem qdisc on $RRXE_NETDEV"
    for k in loss delay reorder duplicate corrupt; do
        case " $p " in
            *" $k "*) grep -q " $k " /tmp/qdisc.txt || fail "netem did not take '$k'" ;;
        esac
    done
}

# netem_report: print eth0's qdisc statistics and fail unless netem dropped packets
# (when it was asked to lose any): the transfer really crossed a lossy link.
netem_report() {
    local dropped
    tc -s qdisc show dev "$RRXE_NETDEV" > /tmp/qdisc-stats.txt
    sed "s/^/  tc| /" /tmp/qdisc-stats.txt
    log "eth0: tx_packets=$(cat /sys/class/net/eth0/statistics/tx_packets)" \
        "rx_packets=$(cat /sys/class/net/eth0/statistics/rx_packets)" \
        "rx_dropped=$(cat /sys/class/net/eth0/statistics/rx_dropped)"
    grep -q ' loss ' /tmp/qdisc.txt || return 0
    dropped=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' /tmp/qdisc-stats.txt | head -1)
    [ -n "$dropped" ] || fail "no drop count in tc -s qdisc"
    [ "$dropped" -gt 0 ] || fail "netem dropped no packets: the link was not lossy"
    log "netem dropped $dropped packets on this guest's egress"
}

# xfer_params: rrxe_xfer's sizes from the kernel command line, into XFER_ARGS,
# XFER_LIMIT (seconds for one transfer, both ends) and XFER_DIRS (lossy_pair_xfer).
# The defaults fit `make check` (at 10% loss rxe moves about 0.06 MB/s in 64 KiB
# messages under TCG); the full run is
#     rrxe.xfer_bytes=64M rrxe.xfer_atomics=10000 rrxe.xfer_limit=7200
xfer_params() {
    XFER_LIMIT=$(kernel_arg rrxe.xfer_limit 600)
    XFER_DIRS=$(kernel_arg rrxe.xfer_dirs ab,ba)
    XFER_ARGS="-b $(kernel_arg rrxe.xfer_bytes 1M) -m $(kernel_arg rrxe.xfer_msg 64K)"
    XFER_ARGS="$XFER_ARGS -q $(kernel_arg rrxe.xfer_depth 8) -n $(kernel_arg rrxe.xfer_atomics 1000)"
}

# xfer_server NAME PORT: an rrxe_xfer server on $RRXE_DEV in the background (output
# in /tmp/NAME.out); sets BG_PID.
xfer_server() {
    bg_start "$1" timeout $((XFER_LIMIT + 30)) rrxe_xfer -s -p "$2" -d "$RRXE_DEV" -t "$XFER_LIMIT"
}

# xfer_client NAME ADDR PORT: an rrxe_xfer client (retrying until the server listens)
# with its progress (-v) on the console as it comes, also in /tmp/NAME.out; returns
# its exit status.
xfer_client() {
    log "+ rrxe_xfer -c $2 -p $3 -d $RRXE_DEV $XFER_ARGS -t $XFER_LIMIT -v"
    { timeout $((XFER_LIMIT + 30)) rrxe_xfer -c "$2" -p "$3" -d "$RRXE_DEV" $XFER_ARGS \
        -t "$XFER_LIMIT" -v 2>&1; echo $? > "/tmp/$1.rc"; } | tee "/tmp/$1.out" | sed "s/^/  $1| /"
    return "$(cat "/tmp/$1.rc")"
}

# lossy_pair_xfer: verified rrxe_xfer runs over eth0 with netem on both guests' egress,
# in the directions of rrxe.xfer_dirs= (default ab,ba: first A is the client of B's
# server, then B of A's; ab or ba for one of them). Passes only if every transfer
# verified and netem really dropped packets.
lossy_pair_xfer() {
    local rc d
    xfer_params
    netem_on
    wait_for_peer_ping 120
    for d in $(echo "$XFER_DIRS" | tr , ' '); do
        case "$d$RRXE_ROLE" in
            aba|bab) xfer_client "xfer-$d" "$RRXE_PEER_IP4" 18600
                     rc=$?
                     [ $rc = 0 ] || fail "$d: client rc=$rc" ;;
            abb|baa) xfer_server "xfer-$d-server" 18600
                     bg_wait "$BG_PID" "xfer-$d-server" $((XFER_LIMIT + 40))
                     rc=$?
                     [ $rc = 0 ] || fail "$d: server rc=$rc" ;;
            *) fail "rrxe.xfer_dirs: '$d' is neither ab nor ba" ;;
        esac
    done
    show_counters
    netem_report
    log "verified over the lossy link ($XFER_DIRS)"
}

