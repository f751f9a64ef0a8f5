#!/bin/sh
# perftest ib_write_bw, 64 KiB RDMA WRITEs, one guest over rrxe.
# Fails on inf/nan/zero numbers or "Can't produce a report" (broken guest clock).
# topology: single
# timeout: 240
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
server_client bw timeout 120 ib_write_bw -d rrxe0 -x "$gid" -F -s 65536 -n 1000 --report_gbits
check_perftest /tmp/bw-client.out
log "ib_write_bw result: $(awk '/#bytes/ {getline; print}' /tmp/bw-client.out)"
