#!/bin/sh
# RoCE v2 over IPv6 on the wire against upstream rxe: guest A runs rdma_rxe
# (rxe0), guest B rrxe (rrxe0). ibv_rc_pingpong with the IPv6 GIDs (A serves, B
# is the client; 4 KiB messages, --chk), then rping to A's 2001:db8::1 (B is the
# client). Passes only if B's eth0 sent at least 400 IPv6 packets
# (Ip6OutTransmits of /proc/net/dev_snmp6/eth0): the traffic really crossed the
# wire as IPv6.
# topology: pair
# timeout: 300
. "$RRXE_LIB"

load_interop
dev=$RRXE_DEV
gid=$(gid_index "$dev" ipv6) || fail "no RoCE v2 GID for $RRXE_IP6"
args="-d $dev -g $gid -n 200 -s 4096 -c"
ip6_out() { awk '$1 == "Ip6OutTransmits" {print $2}' /proc/net/dev_snmp6/eth0; }
u0=$(ip6_out)
if [ "$RRXE_ROLE" = a ]; then
    log "+ timeout 150 ibv_rc_pingpong $args  (server, upstream rxe)"
    timeout 150 ibv_rc_pingpong $args > /tmp/rc-server.out 2>&1
    rc=$?
    sed 's/^/  rc-server| /' /tmp/rc-server.out
    [ $rc = 0 ] || fail "ibv_rc_pingpong server (rxe) rc=$rc"
    grep -q '200 iters' /tmp/rc-server.out || fail "did not complete 200 iterations"
    log "+ timeout 120 rping -s -a $RRXE_IP6 -C 20 -S 1024 -V -v  (server, upstream rxe)"
    timeout 120 rping -s -a "$RRXE_IP6" -C 20 -S 1024 -V -v > /tmp/rping-server.out 2>&1
    rc=$?
    tail -3 /tmp/rping-server.out | cut -c1-100 | sed 's/^/  rping-server| /'
    [ $rc = 0 ] || fail "rping server (rxe, IPv6) rc=$rc"
else
    wait_for_peer_ping 60
    retry_connect 60 rc-client timeout 90 ibv_rc_pingpong $args "$RRXE_PEER_IP4" \
        || fail "ibv_rc_pingpong client (rrxe) rc=$?"
    grep -q '200 iters' /tmp/rc-client.out || fail "did not complete 200 iterations"
    retry 30 1 timeout 60 rping -c -a "$RRXE_PEER_IP6" -C 20 -S 1024 -V -v > /tmp/rping-client.out 2>&1
    rc=$?
    tail -3 /tmp/rping-client.out | cut -c1-100 | sed 's/^/  rping-client| /'
    [ $rc = 0 ] || fail "rping client (rrxe, IPv6) rc=$rc"
    n=$(grep -c 'ping data:' /tmp/rping-client.out)
    [ "$n" -ge 20 ] || fail "rping over IPv6: $n ping lines, expected 20"
    u=$(( $(ip6_out) - u0 ))
    log "eth0 sent $u IPv6 packets"
    [ "$u" -ge 400 ] || fail "only $u IPv6 packets left eth0: not RoCE v2 over IPv6"
fi
show_counters "$dev"
