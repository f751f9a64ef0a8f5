#!/bin/sh
# ibv_ud_pingpong (UD send/recv, 512-byte messages, below the 1024 path MTU)
# on one guest over rrxe.
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "RoCE v2 IPv4 GID index: $gid"
server_client ud timeout 60 ibv_ud_pingpong -d rrxe0 -g "$gid" -n 500 -s 512
grep -q 'bytes in .* seconds' /tmp/ud-client.out || fail "no throughput line from the client"
grep -q '500 iters' /tmp/ud-client.out || fail "client did not complete 500 iterations"
