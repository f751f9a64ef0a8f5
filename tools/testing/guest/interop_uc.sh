#!/bin/sh
# UC interoperability over the wire: ibv_uc_pingpong (UC send/recv, 4 KiB messages of
# four 1024-byte packets, buffers validated with --chk) between upstream rdma_rxe and
# rrxe, in both directions: first guest A (rxe0) serves and guest B (rrxe0) is the
# client, then B serves and A is the client. UC has no ACKs, so this checks rrxe's UC
# opcodes, PSNs and segmentation against upstream in each role. Checks that eth0
# carried the traffic. Every command runs under `timeout`: UC does not retransmit, and
# a device that drops a message fails the test in bounded time.
# topology: pair
# timeout: 300
. "$RRXE_LIB"

load_interop
dev=$RRXE_DEV
gid=$(gid_index "$dev" ipv4) || fail "no RoCE v2 IPv4 GID"
args="-d $dev -g $gid -n 200 -s 4096 -c"
tx0=$(cat /sys/class/net/eth0/statistics/tx_packets)
wait_for_peer_ping 60

# serve NAME: run the server side of one round.
serve() {
    log "+ timeout 100 ibv_uc_pingpong $args  (server, $dev)"
    timeout 100 ibv_uc_pingpong $args > "/tmp/$1.out" 2>&1
    rc=$?
    sed "s/^/  $1| /" "/tmp/$1.out"
    [ $rc = 0 ] || fail "ibv_uc_pingpong server ($dev) rc=$rc"
}

# connect NAME: run the client side of one round ("Couldn't connect" until the
# peer's server listens).
connect() {
    retry_connect 60 "$1" timeout 60 ibv_uc_pingpong $args "$RRXE_PEER_IP4" \
        || fail "ibv_uc_pingpong client ($dev) rc=$?"
}

# check NAME: the round completed.
check() {
    grep -q 'bytes in .* seconds' "/tmp/$1.out" || fail "$1: no throughput line"
    grep -q '200 iters' "/tmp/$1.out" || fail "$1: did not complete 200 iterations"
}

# Round 1: rxe serves, rrxe connects. Round 2: rrxe serves, rxe connects (A waits for
# round 1 to finish on its side before it starts; B's server then listens already or
# soon, and retry_connect covers the gap).
if [ "$RRXE_ROLE" = a ]; then
    serve uc-server-rxe; check uc-server-rxe
    connect uc-client-rxe; check uc-client-rxe
else
    connect uc-client-rrxe; check uc-client-rrxe
    serve uc-server-rrxe; check uc-server-rrxe
fi
tx=$(( $(cat /sys/class/net/eth0/statistics/tx_packets) - tx0 ))
log "eth0 sent $tx packets during the test"
[ "$tx" -ge 800 ] || fail "only $tx packets left eth0: traffic did not cross the wire"
show_counters "$dev"
