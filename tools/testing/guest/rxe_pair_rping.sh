#!/bin/sh
# Baseline, two guests: rping over the wire between upstream rdma_rxe on guest A
# (client) and guest B (server), 20 pings with data verification (-V). Checks that
# eth0 really carried the traffic. Loads the driver named by rrxe.driver= (default rxe),
# so it doubles as an interop test: tools/qemu/run.sh --pair --test rxe_pair_rping
# --append-b rrxe.driver=rrxe
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_driver
tx0=$(cat /sys/class/net/eth0/statistics/tx_packets)
if [ "$RRXE_ROLE" = b ]; then
    run timeout 150 rping -s -a "$RRXE_IP4" -C 20 -S 1024 -V -v
else
    wait_for_peer_ping 60
    retry 60 1 rping -c -a "$RRXE_PEER_IP4" -C 20 -S 1024 -V -v > /tmp/rping-client.out 2>&1
    rc=$?
    sed 's/^/  rping-client| /' /tmp/rping-client.out
    [ $rc = 0 ] || fail "rping client rc=$rc"
    n=$(grep -c 'ping data:' /tmp/rping-client.out)
    [ "$n" -ge 20 ] || fail "client printed $n ping lines, expected 20"
fi
tx=$(( $(cat /sys/class/net/eth0/statistics/tx_packets) - tx0 ))
log "eth0 sent $tx packets during the test"
[ "$tx" -ge 40 ] || fail "only $tx packets left eth0: traffic did not cross the wire"
