#!/bin/sh
# Baseline: ibv_rc_pingpong (RC send/recv, buffers validated with --chk) on one guest
# over upstream rdma_rxe, using the RoCE v2 GID of eth0's IPv4 address.
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "RoCE v2 IPv4 GID index: $gid"
server_client rc ibv_rc_pingpong -d rxe0 -g "$gid" -n 500 -s 4096 -c
grep -q 'bytes in .* seconds' /tmp/rc-client.out || fail "no throughput line from the client"
grep -q '500 iters' /tmp/rc-client.out || fail "client did not complete 500 iterations"
