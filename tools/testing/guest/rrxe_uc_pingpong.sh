#!/bin/sh
# UC on one guest over rrxe: ibv_uc_pingpong (UC send/recv, 4 KiB messages of four
# 1024-byte packets, buffers validated with --chk), then perftest's ib_write_bw and
# ib_send_bw over UC QPs (-c UC) with small counts. UC neither ACKs nor retransmits,
# so a lost or mishandled packet shows as a hang or a missing message: every command
# runs under `timeout`. ib_send_bw's 200 messages fit the receiver's first batch of
# receive WQEs, so none is dropped for want of one.
# topology: single
# timeout: 300
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "RoCE v2 IPv4 GID index: $gid"
server_client uc timeout 60 ibv_uc_pingpong -d rrxe0 -g "$gid" -n 500 -s 4096 -c
grep -q 'bytes in .* seconds' /tmp/uc-client.out || fail "no throughput line from the client"
grep -q '500 iters' /tmp/uc-client.out || fail "client did not complete 500 iterations"

server_client wbw timeout 90 ib_write_bw -d rrxe0 -x "$gid" -F -c UC -s 65536 -n 200 --report_gbits
check_perftest /tmp/wbw-client.out
log "ib_write_bw -c UC result: $(awk '/#bytes/ {getline; print}' /tmp/wbw-client.out)"

server_client sbw timeout 90 ib_send_bw -d rrxe0 -x "$gid" -F -c UC -s 16384 -n 200 --report_gbits
check_perftest /tmp/sbw-client.out
log "ib_send_bw -c UC result: $(awk '/#bytes/ {getline; print}' /tmp/sbw-client.out)"
show_counters rrxe0
