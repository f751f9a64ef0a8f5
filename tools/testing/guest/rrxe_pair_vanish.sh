#!/bin/sh
# Two guests, rrxe on both, ib_write_bw streaming RDMA WRITEs from A to B over the
# wire; mid-transfer guest B deletes its rrxe device (rdma link delete) and then
# unloads rrxe. Nothing may splat or hang: B's delete returns promptly and its
# process gets IBV_EVENT_DEVICE_FATAL; A's client, which always has WRITEs in
# flight to the vanished QP, fails with a completion error (transport retries
# exhausted) on its own, well before its timeout; both modules unload afterwards.
# (A ping-pong would not do: a side that waits for its peer's next message has
# nothing in flight, so RC gives it no error to report, on rxe as on rrxe.)
# topology: pair
# timeout: 300
. "$RRXE_LIB"

rx_packets() { cat /sys/class/net/eth0/statistics/rx_packets; }

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
# perftest's defaults: ACK timeout 14 (67 ms), retry count 7, so A gives up within
# seconds of losing its peer. -D: run for up to 100 s.
args="-d rrxe0 -x $gid -F -s 65536 -D 100"
if [ "$RRXE_ROLE" = b ]; then
    ibv_asyncwatch -d rrxe0 > /tmp/async.out 2>&1 &
    watch=$!
    bg_start bw-server timeout 200 ib_write_bw $args
    srv=$BG_PID
    rx0=$(rx_packets)
    wait_for 90 sh -c "[ \$(cat /sys/class/net/eth0/statistics/rx_packets) -ge $((rx0 + 2000)) ]" \
        || fail "no traffic from A"
    log "traffic flowing ($(( $(rx_packets) - rx0 )) packets in): deleting rrxe0"
    t0=$(date +%s)
    run timeout 30 rdma link delete rrxe0
    log "rdma link delete took $(( $(date +%s) - t0 ))s"
    wait_for 10 grep -q DEVICE_FATAL /tmp/async.out || {
        cat /tmp/async.out; fail "no IBV_EVENT_DEVICE_FATAL after link delete"; }
    log "the server saw: $(grep -m1 DEVICE_FATAL /tmp/async.out)"
    # The server may poll its (now unmapped) CQ forever: that is its affair.
    kill "$srv" "$watch" 2>/dev/null
    wait "$srv" 2>/dev/null
    run timeout 30 rmmod rrxe
else
    wait_for_peer_ping 60
    t0=$(date +%s)
    # "Couldn't connect" until B's server listens; a connected client is not retried.
    retry_connect 60 bw-client timeout 150 ib_write_bw $args "$RRXE_PEER_IP4"
    rc=$?
    log "client exited with rc=$rc after $(( $(date +%s) - t0 ))s"
    [ $rc = 124 ] && fail "client hung until its timeout after the peer device vanished"
    [ $rc = 0 ] && fail "client ran its full 100 s: the peer was not removed mid-transfer"
    grep -qi 'completion with error\|status' /tmp/bw-client.out || fail "client did not report a completion error"
    run timeout 30 rmmod rrxe
fi
