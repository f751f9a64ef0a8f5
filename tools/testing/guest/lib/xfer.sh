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
    dropped=$(netem_dropped)
    [ -n "$dropped" ] || fail "no drop count in tc -s qdisc"
    [ "$dropped" -gt 0 ] || fail "netem dropped no packets: the link was not lossy"
    log "netem dropped $dropped packets on this guest's egress"
}

# netem_dropped: the packets netem dropped, from netem_report's statistics.
netem_dropped() {
    sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' /tmp/qdisc-stats.txt | head -1
}

# queue_refused: after netem_report, fail unless netem refused packets (a short
# queue filled) and rrxe's send_queue_full counted refusals; sets REFUSED to it.
queue_refused() {
    local dropped
    dropped=$(netem_dropped)
    REFUSED=$(hw_counter send_queue_full)
    [ "${dropped:-0}" -gt 0 ] || fail "netem dropped nothing: the queue never filled"
    [ "$REFUSED" -gt 0 ] || fail "send_queue_full is 0, but netem dropped $dropped packets"
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
    local rc d bad=
    xfer_params
    netem_on
    wait_for_peer_ping 120
    for d in $(echo "$XFER_DIRS" | tr , ' '); do
        case "$d$RRXE_ROLE" in
            aba|bab) xfer_client "xfer-$d" "$RRXE_PEER_IP4" 18600
                     rc=$?
                     [ $rc = 0 ] || bad="$d: client rc=$rc" ;;
            abb|baa) xfer_server "xfer-$d-server" 18600
                     bg_wait "$BG_PID" "xfer-$d-server" $((XFER_LIMIT + 40))
                     rc=$?
                     [ $rc = 0 ] || bad="$d: server rc=$rc" ;;
            *) fail "rrxe.xfer_dirs: '$d' is neither ab nor ba" ;;
        esac
        [ -z "$bad" ] || break
    done
    # The counters and the link's statistics also explain a failure.
    show_counters
    netem_report
    [ -z "$bad" ] || fail "$bad"
    log "verified over the lossy link ($XFER_DIRS)"
}

# ---- teardown under load (one guest, rrxe0 on eth0, traffic looped back)

# td_traffic_start: TD_PAIRS rrxe_xfer client/server pairs, each client repeating its
# rounds until the device goes (-R 0), and one ib_write_bw pair as more load. Their
# pids go to TD_XFER ("pid:name ...") and TD_PERF.
td_traffic_start() {
    local p gid
    TD_XFER= TD_PERF=
    for p in $(seq 1 "$TD_PAIRS"); do
        rrxe_xfer -s -p $((18600 + p)) -d rrxe0 -T "$TD_ACK_TIMEOUT" -t "$TD_LIMIT" \
            > "/tmp/td-s$p.out" 2>&1 &
        TD_XFER="$TD_XFER $!:td-s$p"
        rrxe_xfer -c "$RRXE_IP4" -p $((18600 + p)) -d rrxe0 -R 0 -b 256K -m 64K -q 8 -n 100 \
            -T "$TD_ACK_TIMEOUT" -t "$TD_LIMIT" > "/tmp/td-c$p.out" 2>&1 &
        TD_XFER="$TD_XFER $!:td-c$p"
    done
    gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID on rrxe0"
    ib_write_bw -d rrxe0 -x "$gid" -F -s 65536 -D "$TD_LIMIT" > /tmp/td-bw-s.out 2>&1 &
    TD_PERF="$!:td-bw-s"
    wait_for_port 18515 60
    ib_write_bw -d rrxe0 -x "$gid" -F -s 65536 -D "$TD_LIMIT" "$RRXE_IP4" > /tmp/td-bw-c.out 2>&1 &
    TD_PERF="$TD_PERF $!:td-bw-c"
}

# td_flowing: every rrxe_xfer client has moved data (a phase line or progress).
td_flowing() {
    local p
    for p in $(seq 1 "$TD_PAIRS"); do
        grep -q '^rrxe_xfer\[client\]: write ' "/tmp/td-c$p.out" || return 1
    done
}

# td_all_running: every traffic process is still there (none failed on its own
# before the removal); fails the test with the output of one that is not.
td_all_running() {
    local e pid name
    for e in $TD_XFER $TD_PERF; do
        pid=${e%%:*} name=${e#*:}
        td_proc_gone "$pid" || continue
        sed "s/^/  $name| /" "/tmp/$name.out" | tail -10
        fail "cycle $TD_CYCLE: $name ended before the device was removed"
    done
}

# td_proc_gone PID: the process has exited (a zombie counts: it left the kernel).
td_proc_gone() {
    [ ! -d "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

# td_reap: after the device went away, every rrxe_xfer must end within 60 s with an
# error exit (1: a completion error, 3: IBV_EVENT_DEVICE_FATAL or the CM's
# DEVICE_REMOVAL); ib_write_bw may keep polling its dead CQ, but must die at SIGKILL
# (nothing stuck in the kernel). Counts in TD_FATAL / TD_ERR.
td_reap() {
    local e pid name rc n gone
    for e in $TD_XFER; do
        pid=${e%%:*} name=${e#*:} n=0
        while ! td_proc_gone "$pid"; do
            n=$((n + 1))
            if [ $n -ge 300 ]; then
                log "$name (pid $pid) still running 60 s after the device went away:"
                grep -E '^(State|wchan)' "/proc/$pid/status" 2>/dev/null
                cat "/proc/$pid/stack" 2>/dev/null
                sed "s/^/  $name| /" "/tmp/$name.out" | tail -5
                fail "cycle $TD_CYCLE: $name did not notice the device's removal"
            fi
            sleep 0.2
        done
        wait "$pid"
        rc=$?
        case $rc in
            3) TD_FATAL=$((TD_FATAL + 1)) ;;
            1) TD_ERR=$((TD_ERR + 1)) ;;
            *) sed "s/^/  $name| /" "/tmp/$name.out" | tail -10
               fail "cycle $TD_CYCLE: $name ended with rc=$rc, not an error exit" ;;
        esac
        grep -q 'IBV_EVENT_DEVICE_FATAL' "/tmp/$name.out" && TD_SAW_FATAL=$((TD_SAW_FATAL + 1))
        [ "$TD_CYCLE" = 1 ] && sed "s/^/  $name| /" "/tmp/$name.out" | tail -2
    done
    # ib_write_bw: 5 s for all of them together to end on their own, then SIGKILL.
    n=0
    while [ $n -lt 25 ]; do
        gone=1
        for e in $TD_PERF; do td_proc_gone "${e%%:*}" || gone=; done
        [ -n "$gone" ] && break
        n=$((n + 1))
        sleep 0.2
    done
    for e in $TD_PERF; do
        pid=${e%%:*} name=${e#*:} n=0
        if td_proc_gone "$pid"; then
            TD_PERF_ENDED=$((TD_PERF_ENDED + 1))
        else
            TD_PERF_KILLED=$((TD_PERF_KILLED + 1))
            kill -9 "$pid" 2>/dev/null
        fi
        while ! td_proc_gone "$pid"; do
            n=$((n + 1))
            if [ $n -ge 50 ]; then
                grep -E '^State' "/proc/$pid/status"
                cat "/proc/$pid/stack" 2>/dev/null
                fail "cycle $TD_CYCLE: $name (pid $pid) survives SIGKILL: stuck in the kernel"
            fi
            sleep 0.2
        done
        wait "$pid" 2>/dev/null
    done
}

# teardown_under_load REMOVE RECREATE: rrxe.teardown_cycles= (default 10) cycles of:
# traffic on rrxe0, REMOVE (a shell function) while it flows, every process ends
# (td_reap), RECREATE brings rrxe0 back ACTIVE. Then a short verified transfer on the
# re-created device. Every command is bounded. rrxe.teardown_pairs= rrxe_xfer pairs
# (default 2), rrxe.teardown_limit= seconds for each traffic process (default 300).
# rrxe_xfer runs with ACK timeout rrxe.teardown_ack_timeout= (default 18, 1.07 s): this
# test is about removal, and a slow debug guest must not lose its traffic to
# retransmission timeouts before the removal (every process must still run then).
# A removal or re-creation that takes over 30 s gets the kernel stacks of blocked
# tasks printed; at rrxe.teardown_cmd_timeout= seconds (default 120) it fails the test.
teardown_under_load() {
    local remove=$1 recreate=$2 i t0 t1 t2 t3 t4 start srv rc
    TD_CYCLES=$(kernel_arg rrxe.teardown_cycles 10)
    TD_PAIRS=$(kernel_arg rrxe.teardown_pairs 2)
    TD_LIMIT=$(kernel_arg rrxe.teardown_limit 300)
    TD_CMD_TIMEOUT=$(kernel_arg rrxe.teardown_cmd_timeout 120)
    TD_ACK_TIMEOUT=$(kernel_arg rrxe.teardown_ack_timeout 18)
    TD_FATAL=0 TD_ERR=0 TD_SAW_FATAL=0 TD_PERF_ENDED=0 TD_PERF_KILLED=0
    log "$TD_CYCLES cycles of $remove under load ($TD_PAIRS rrxe_xfer pairs and ib_write_bw)"
    start=$(date +%s)
    for i in $(seq 1 "$TD_CYCLES"); do
        TD_CYCLE=$i
        t0=$(date +%s)
        td_traffic_start
        wait_for 120 td_flowing || {
            for f in /tmp/td-c*.out; do sed "s|^|  $f| |" "$f" | tail -5; done
            fail "cycle $i: no data moved within 120 s"; }
        # Vary the moment of removal within the transfer.
        sleep "0.$((i * 37 % 10))"
        td_all_running
        t1=$(date +%s)
        $remove || fail "cycle $i: $remove failed (rc=$?)"
        t2=$(date +%s)
        td_reap
        t3=$(date +%s)
        $recreate || fail "cycle $i: $recreate failed"
        t4=$(date +%s)
        log "cycle $i: traffic up $((t1 - t0))s, $remove $((t2 - t1))s, processes gone" \
            "$((t3 - t2))s, $recreate $((t4 - t3))s, cycle $((t4 - t0))s"
    done
    log "$TD_CYCLES cycles in $(( $(date +%s) - start ))s; rrxe_xfer endings: $TD_FATAL device gone," \
        "$TD_ERR completion error; $TD_SAW_FATAL saw IBV_EVENT_DEVICE_FATAL;" \
        "ib_write_bw: $TD_PERF_ENDED ended on their own, $TD_PERF_KILLED killed"
    # The re-created device works.
    bg_start td-final-s timeout 150 rrxe_xfer -s -p 18700 -d rrxe0 -T "$TD_ACK_TIMEOUT" -t 120
    srv=$BG_PID
    timeout 150 rrxe_xfer -c "$RRXE_IP4" -p 18700 -d rrxe0 -b 4M -m 256K -n 1000 \
        -T "$TD_ACK_TIMEOUT" -t 120 > /tmp/td-final-c.out 2>&1
    rc=$?
    sed 's/^/  td-final-c| /' /tmp/td-final-c.out
    [ $rc = 0 ] || fail "transfer on the re-created device: client rc=$rc"
    bg_wait "$srv" td-final-s 60 || fail "transfer on the re-created device: server failed"
    log "a verified transfer on the re-created rrxe0 after $TD_CYCLES cycles"
}

# td_bounded SECONDS CMD...: run CMD under timeout SECONDS; if it is still running
# after 30 s, show where it waits in the kernel (once). Returns CMD's rc (124/143: the
# timeout struck).
td_bounded() {
    local secs=$1 pid t0 told= rc
    shift
    timeout "$secs" "$@" &
    pid=$!
    t0=$(date +%s)
    while ! td_proc_gone "$pid"; do
        if [ -z "$told" ] && [ $(( $(date +%s) - t0 )) -ge 30 ]; then
            told=1
            log "still waiting after 30 s: $*"
            for t in /proc/[0-9]*; do
                grep -q '^State:.*D' "$t/status" 2>/dev/null || continue
                echo "  pid ${t#/proc/} ($(cat "$t/comm")) in D state:"
                sed 's/^/    /' "$t/stack" 2>/dev/null
            done
        fi
        sleep 0.2
    done
    wait "$pid"
    rc=$?
    [ -n "$told" ] && log "$* took $(( $(date +%s) - t0 )) s (rc=$rc)"
    return $rc
}

# td_link_delete / td_link_add: `rdma link delete rrxe0` and back (bounded by
# rrxe.teardown_cmd_timeout=, default 120 s).
td_link_delete() { td_bounded "$TD_CMD_TIMEOUT" rdma link delete rrxe0; }
td_link_add() {
    td_bounded "$TD_CMD_TIMEOUT" rdma link add rrxe0 type rrxe netdev "$RRXE_NETDEV" || return 1
    wait_for 20 rdma_dev_ready rrxe0
}

# td_rmmod / td_modprobe: unload rrxe (its device with it) and load it again with
# modprobe, as a user would (bounded).
td_rmmod() {
    td_bounded "$TD_CMD_TIMEOUT" rmmod rrxe || return 1
    ! grep -q '^rrxe ' /proc/modules
}
td_modprobe() {
    td_bounded "$TD_CMD_TIMEOUT" modprobe rrxe || return 1
    td_link_add
}
