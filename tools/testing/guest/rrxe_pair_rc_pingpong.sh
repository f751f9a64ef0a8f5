#!/bin/sh
# Two guests, rrxe on both: ibv_rc_pingpong over the wire (RC send/recv, 4 KiB
# messages of four 1024-byte packets, buffers validated with --chk); guest B serves,
# guest A is the client. Checks that eth0 carried the traffic. Baseline: the same
# with rdma_rxe (rxe_pair_rping for the wire). Both sides run under `timeout`, so a
# device without a datapath fails the test.
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
args="-d rrxe0 -g $gid -n 200 -s 4096 -c"
tx0=$(cat /sys/class/net/eth0/statistics/tx_packets)
if [ "$RRXE_ROLE" = b ]; then
    run timeout 150 ibv_rc_pingpong $args
else
    wait_for_peer_ping 60
    # "Couldn't connect" until B's server listens; a connected client is not retried.
    retry_connect 60 rc-client timeout 90 ibv_rc_pingpong $args "$RRXE_PEER_IP4" \
        || fail "ibv_rc_pingpong client rc=$?"
    grep -q 'bytes in .* seconds' /tmp/rc-client.out || fail "no throughput line from the client"
    grep -q '200 iters' /tmp/rc-client.out || fail "client did not complete 200 iterations"
fi
tx=$(( $(cat /sys/class/net/eth0/statistics/tx_packets) - tx0 ))
log "eth0 sent $tx packets during the test"
[ "$tx" -ge 400 ] || fail "only $tx packets left eth0: traffic did not cross the wire"
show_counters rrxe0
