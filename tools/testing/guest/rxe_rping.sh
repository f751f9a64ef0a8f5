#!/bin/sh
# Baseline: rping client and server on one guest over upstream rdma_rxe (rxe loops
# packets to its own address internally), 20 pings with data verification (-V).
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rxe rxe0
bg_start rping-server rping -s -a "$RRXE_IP4" -C 20 -S 1024 -V -v
srv=$BG_PID
retry 20 0.5 rping -c -a "$RRXE_IP4" -C 20 -S 1024 -V -v > /tmp/rping-client.out 2>&1
rc=$?
sed 's/^/  rping-client| /' /tmp/rping-client.out
[ $rc = 0 ] || fail "rping client rc=$rc"
bg_wait "$srv" rping-server 30 || fail "rping server failed"
n=$(grep -c 'ping data:' /tmp/rping-client.out)
[ "$n" -ge 20 ] || fail "client printed $n ping lines, expected 20"
log "rping: $n verified pings"
