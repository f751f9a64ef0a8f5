#!/bin/sh
# Memory windows over the wire between upstream rdma_rxe (guest A, rxe0) and rrxe (guest B,
# rrxe0), with rrxe_mw_peer: first rxe owns the memory and rrxe reaches it, then the other
# way round. The owner binds a type 1 window (ibv_bind_mw) and a type 2 window
# (IBV_WR_BIND_MW) over a region without remote rights; the accessor WRITEs and READs
# through both (data checked on both ends), sends SEND_WITH_INV with the type 2 key (the
# owner's receive must report the invalidation and that key), and a later WRITE with it
# must fail with REM_ACCESS_ERR; WRITEs across a window's end must fail with
# REM_ACCESS_ERR and leave the owner's memory unchanged (rxe as the owner lets one inside
# its region through: accepted there only). rrxe.mw_fault=data|range|inv on the kernel
# command line injects a fault in the accessor, and the test must then fail.
# topology: pair
# timeout: 300
. "$RRXE_LIB"

command -v rrxe_mw_peer >/dev/null || fail "rrxe_mw_peer not on PATH: run tools/testing/verbs/build.sh"
load_interop
dev=$RRXE_DEV
gid=$(gid_index "$dev" ipv4) || fail "no RoCE v2 IPv4 GID"
fault=$(kernel_arg rrxe.mw_fault "")
args="-d $dev -g $gid -t 120 -v"
wait_for_peer_ping 60

# mw_peer NAME ROLE-ARGS...: one end of one direction, output in /tmp/NAME.out; every
# check of its three cases must pass.
mw_peer() {
    local name=$1 rc c
    shift
    log "+ timeout 150 rrxe_mw_peer $args $*  (output: /tmp/$name.out)"
    timeout 150 rrxe_mw_peer $args "$@" > "/tmp/$name.out" 2>&1
    rc=$?
    sed "s/^/  $name| /" "/tmp/$name.out"
    [ $rc = 0 ] || fail "$name: rrxe_mw_peer rc=$rc: $(grep '^FAIL' "/tmp/$name.out" | head -1)"
    for c in windows past_region past_window; do
        grep -qx "ok $c" "/tmp/$name.out" || fail "$name: case $c did not pass"
    done
    grep -qx PASS "/tmp/$name.out" || fail "$name: no PASS line"
}

# accessor NAME: the accessing end (with the fault knob, if any).
accessor() {
    if [ -n "$fault" ]; then
        log "injecting fault '$fault' into the accessor: this run must fail"
        mw_peer "$1" -a "$RRXE_PEER_IP4" -F "$fault"
    else
        mw_peer "$1" -a "$RRXE_PEER_IP4"
    fi
}

# Direction 1: rxe owns, rrxe accesses. Direction 2: rrxe owns, rxe accesses. Each
# accessor retries its TCP connect (120 s) until the owner listens.
if [ "$RRXE_ROLE" = a ]; then
    mw_peer "owner-$dev" -o
    accessor "accessor-$dev"
else
    accessor "accessor-$dev"
    mw_peer "owner-$dev" -o
fi
show_counters "$dev"
