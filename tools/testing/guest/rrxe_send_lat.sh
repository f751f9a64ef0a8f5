#!/bin/sh
# perftest ib_send_lat, 2-byte SENDs, one guest over rrxe (ib_send_lat sends inline).
# Fails on inf/nan/zero numbers or "Can't produce a report" (broken guest clock).
# topology: single
# timeout: 240
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
server_client lat timeout 120 ib_send_lat -d rrxe0 -x "$gid" -F -s 2 -n 1000
check_perftest /tmp/lat-client.out
log "ib_send_lat result: $(awk '/#bytes/ {getline; print}' /tmp/lat-client.out)"
