#!/bin/sh
# rrxe on both guests: a stream of UD datagrams (perftest ib_send_bw -c UD, 1 KiB) from
# A to B over a link whose transmit queue is short: netem on A's eth0 takes 8 packets
# and sends them at 20 Mbit/s (rrxe.txq_netem=), and refuses the rest of every burst
# (NET_XMIT_DROP). A UD QP whose datagram the queue refused keeps it at the head of its
# send queue and sends it again after a pause, as a NIC's send queue backs up, so every
# datagram reaches B: B's server, which waits for all of them, completes; A's
# send_queue_full counts the refusals. Before the pause, each refused datagram was lost
# and B's server waited for it until its time limit.
# topology: pair
# timeout: 300
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

# lib/xfer.sh's netem_on reads this default.
XFER_NETEM_DEFAULT=$(kernel_arg rrxe.txq_netem rate,20mbit,limit,8)
ITERS=$(kernel_arg rrxe.ud_iters 3000)
load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
args="-c UD -d rrxe0 -x $gid -F -s 1024 -n $ITERS"
if [ "$RRXE_ROLE" = b ]; then
    # Without the pause this waits for the lost datagrams until the limit.
    run timeout 150 ib_send_bw $args
    show_counters
    log "B received the $ITERS datagrams"
    exit 0
fi
netem_on
wait_for_peer_ping 60
retry_connect 60 ud-client timeout 150 ib_send_bw $args "$RRXE_PEER_IP4"
rc=$?
show_counters
netem_report
[ $rc = 0 ] || fail "ib_send_bw client rc=$rc"
check_perftest /tmp/ud-client.out
queue_refused
log "the full queue refused $REFUSED datagrams; $ITERS went: $(awk '/#bytes/ {getline; print}' /tmp/ud-client.out)"
