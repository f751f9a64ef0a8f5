#!/bin/sh
# Baseline, two guests: perftest ib_write_bw over the wire, upstream rdma_rxe on both;
# guest B serves, guest A is the client. Numbers must be finite and non-zero.
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
args="-d rxe0 -x $gid -F -s 65536 -n 200 -t 2 --report_gbits"
if [ "$RRXE_ROLE" = b ]; then
    run timeout 150 ib_write_bw $args
else
    wait_for_peer_ping 60
    # The client's TCP connect fails fast until B's server listens.
    retry 60 1 ib_write_bw $args "$RRXE_PEER_IP4" > /tmp/bw-client.out 2>&1
    rc=$?
    sed 's/^/  bw-client| /' /tmp/bw-client.out
    [ $rc = 0 ] || fail "ib_write_bw client rc=$rc"
    check_perftest /tmp/bw-client.out
    log "ib_write_bw result: $(awk '/#bytes/ {getline; print}' /tmp/bw-client.out)"
fi
show_counters
log "eth0 rx_dropped=$(cat /sys/class/net/eth0/statistics/rx_dropped) rx_packets=$(cat /sys/class/net/eth0/statistics/rx_packets)"
