#!/bin/sh
# Interoperability over the wire: guest A runs upstream rdma_rxe (rxe0) and serves
# ibv_rc_pingpong, guest B runs rrxe (rrxe0) as the client (RC send/recv, 4 KiB
# messages of four 1024-byte packets, buffers validated with --chk), so rrxe's wire
# format, ACKs and PSNs are checked against upstream. Checks that eth0 carried the
# traffic. Both sides run under `timeout`, so a device without a datapath fails the test.
# On B, rrxe_sport watches eth0: the RC packets each way must carry the UDP source port
# ib_core's rdma_get_udp_sport derives from the two QP numbers (flow label 0), which rxe
# and RoCE NICs use too.
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_interop
dev=$RRXE_DEV
gid=$(gid_index "$dev" ipv4) || fail "no RoCE v2 IPv4 GID"
args="-d $dev -g $gid -n 200 -s 4096 -c"
tx0=$(cat /sys/class/net/eth0/statistics/tx_packets)
if [ "$RRXE_ROLE" = a ]; then
    log "+ timeout 150 ibv_rc_pingpong $args  (server, upstream rxe)"
    timeout 150 ibv_rc_pingpong $args > /tmp/rc-server.out 2>&1
    rc=$?
    sed 's/^/  rc-server| /' /tmp/rc-server.out
    [ $rc = 0 ] || fail "ibv_rc_pingpong server (rxe) rc=$rc"
    out=/tmp/rc-server.out
else
    wait_for_peer_ping 60
    bg_start sport rrxe_sport -i "$RRXE_NETDEV" -n 100 -t 150
    sport_pid=$BG_PID
    # "Couldn't connect" until A's server listens; a connected client is not retried.
    retry_connect 60 rc-client timeout 90 ibv_rc_pingpong $args "$RRXE_PEER_IP4" \
        || fail "ibv_rc_pingpong client (rrxe) rc=$?"
    bg_wait "$sport_pid" sport 30 || fail "UDP source ports (rrxe_sport rc=$?)"
    out=/tmp/rc-client.out
fi
grep -q 'bytes in .* seconds' $out || fail "no throughput line"
grep -q '200 iters' $out || fail "did not complete 200 iterations"
tx=$(( $(cat /sys/class/net/eth0/statistics/tx_packets) - tx0 ))
log "eth0 sent $tx packets during the test"
[ "$tx" -ge 400 ] || fail "only $tx packets left eth0: traffic did not cross the wire"
show_counters "$dev"
