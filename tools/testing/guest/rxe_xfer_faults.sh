#!/bin/sh
# rrxe_xfer's checks can fail: on upstream rdma_rxe (one guest, looped back) a clean
# run passes, and a run with each injected fault (-F: a flipped byte in the WRITE,
# READ or SEND data, a fetch-and-add that adds 2) must fail with the matching
# complaint. The lossy-network and teardown tests rely on these checks.
# topology: single
# timeout: 240
. "$RRXE_LIB"

# xfer_local NAME EXTRA...: server and client on this guest; returns the client's rc.
xfer_local() {
    local name=$1 srv rc
    shift
    bg_start "$name-s" timeout 90 rrxe_xfer -s -p 18650 -d rxe0 -t 60
    srv=$BG_PID
    timeout 90 rrxe_xfer -c "$RRXE_IP4" -p 18650 -d rxe0 -b 256K -m 64K -n 100 -t 60 "$@" \
        > "/tmp/$name-c.out" 2>&1
    rc=$?
    sed "s/^/  $name-c| /" "/tmp/$name-c.out"
    bg_wait "$srv" "$name-s" 30
    return $rc
}

load_rxe rxe0
xfer_local clean || fail "a clean run failed"
for f in write:'write verdict: the server found 1 bad bytes' read:'read: 1 bad bytes' \
         send:'send verdict: the server found 1 bad bytes' \
         atomic:'fetch-add: the word is 101 after 100 adds'; do
    xfer_local "fault-${f%%:*}" -F "${f%%:*}"
    rc=$?
    [ $rc = 1 ] || fail "-F ${f%%:*}: client rc=$rc, expected 1"
    grep -q "${f#*:}" "/tmp/fault-${f%%:*}-c.out" || fail "-F ${f%%:*}: no '${f#*:}'"
    log "-F ${f%%:*}: detected"
done
