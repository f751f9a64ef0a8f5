#!/bin/sh
# ibv_rc_pingpong (RC send/recv, buffers validated with --chk) on one guest over rrxe:
# server and client on rrxe0, using the RoCE v2 GID of eth0's IPv4 address.
# Baseline: rxe_rc_pingpong. Both sides run under `timeout`: ibv_rc_pingpong polls
# for completions forever, and a device without a datapath must fail the test.
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "RoCE v2 IPv4 GID index: $gid"
server_client rc timeout 60 ibv_rc_pingpong -d rrxe0 -g "$gid" -n 500 -s 4096 -c
grep -q 'bytes in .* seconds' /tmp/rc-client.out || fail "no throughput line from the client"
grep -q '500 iters' /tmp/rc-client.out || fail "client did not complete 500 iterations"
