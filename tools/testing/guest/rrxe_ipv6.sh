#!/bin/sh
# The datapath over IPv6 GIDs on one guest (eth0's 2001:db8::1): RC
# (ibv_rc_pingpong -c, 4 KiB messages), UD (ibv_ud_pingpong, whose receives see
# an IPv6 GRH) and rdma_cm (rping to 2001:db8::1, CM MADs and RC data).
# The wire over IPv6, against upstream rxe: interop_ipv6.
# topology: single
# timeout: 240
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv6) || fail "no RoCE v2 GID for $RRXE_IP6"
log "RoCE v2 IPv6 GID index: $gid"
server_client rc timeout 60 ibv_rc_pingpong -d rrxe0 -g "$gid" -n 200 -s 4096 -c
grep -q '200 iters' /tmp/rc-client.out || fail "RC client did not complete 200 iterations"
server_client ud timeout 60 ibv_ud_pingpong -d rrxe0 -g "$gid" -n 200 -s 512
grep -q '200 iters' /tmp/ud-client.out || fail "UD client did not complete 200 iterations"

bg_start rping6-server timeout 60 rping -s -a "$RRXE_IP6" -C 20 -S 1024 -V -v
srv=$BG_PID
retry 20 0.5 timeout 60 rping -c -a "$RRXE_IP6" -C 20 -S 1024 -V -v > /tmp/rping6.out 2>&1
rc=$?
cut -c1-100 /tmp/rping6.out | sed 's/^/  rping6-client| /'
[ $rc = 0 ] || fail "rping over IPv6 rc=$rc"
bg_wait "$srv" rping6-server 30 || fail "rping server (IPv6) failed"
n=$(grep -c 'ping data:' /tmp/rping6.out)
[ "$n" -ge 20 ] || fail "rping over IPv6: $n ping lines, expected 20"
show_counters rrxe0
log "IPv6: RC, UD and rdma_cm ok"
