#!/bin/sh
# Baseline: perftest ib_write_bw, 64 KiB RDMA WRITEs, one guest over upstream rdma_rxe.
# Fails on inf/nan/zero numbers or "Can't produce a report" (broken guest clock).
# topology: single
# timeout: 240
. "$RRXE_LIB"

load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
server_client bw ib_write_bw -d rxe0 -x "$gid" -F -s 65536 -n 1000 --report_gbits
check_perftest /tmp/bw-client.out
log "ib_write_bw result: $(awk '/#bytes/ {getline; print}' /tmp/bw-client.out)"
