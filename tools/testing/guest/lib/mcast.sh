# Helpers for the UD multicast tests: mckey (rdmacm-utils) joins a group through
# rdma_cm (which also joins the IP group) and sends or receives UD datagrams on it.
# Source after common.sh and load the RDMA device first.

MC_GROUP=239.1.2.3
MC_COUNT=50
MC_SIZE=200

# mc_receiver NAME BIND_ADDR CONNECTIONS: start mckey receiving MC_COUNT datagrams on
# CONNECTIONS UD QPs (each joins the group and must get every datagram); waits until it
# has joined. Sets MC_PID.
mc_receiver() {
    bg_start "$1" timeout 120 mckey -m $MC_GROUP -b "$2" -c "$3" -C $MC_COUNT -S $MC_SIZE
    MC_PID=$BG_PID
    # mckey's output is block-buffered into the file: watch the IP group join that
    # rdma_cm makes instead, then give the QPs' attachments (made as the join
    # events arrive) a moment.
    wait_for 120 sh -c "/usr/bin/ip maddr show dev $RRXE_NETDEV | grep -qw $MC_GROUP" ||
        fail "$1: mckey did not join $MC_GROUP"
    sleep 2
    log "$1: joined $MC_GROUP with $3 QPs, waiting for $MC_COUNT datagrams each"
}

# mc_receiver_done NAME: the receiver got every datagram on every QP.
mc_receiver_done() {
    bg_wait "$MC_PID" "$1" 90 || fail "$1: mckey receiver failed (datagrams lost?)"
    grep -q 'data transfers complete' "/tmp/$1.out" || fail "$1: no 'data transfers complete'"
    log "$1: every QP received $MC_COUNT datagrams"
}

# mc_send NAME BIND_ADDR: mckey sends MC_COUNT datagrams of MC_SIZE bytes to the group.
mc_send() {
    run timeout 60 mckey -m $MC_GROUP -b "$2" -s -C $MC_COUNT -S $MC_SIZE > "/tmp/$1.out" 2>&1
    grep -q 'data transfers complete' "/tmp/$1.out" || fail "$1: sender did not complete"
    log "$1: sent $MC_COUNT datagrams to $MC_GROUP"
}

# mc_send_until_done NAME BIND_ADDR PORT: mckey sends MC_COUNT datagrams to the group,
# again and again (at most 30 times) until the peer listens on TCP PORT (its receiver
# has all it wanted).
mc_send_until_done() {
    local i
    for i in $(seq 1 30); do
        timeout 60 mckey -m $MC_GROUP -b "$2" -s -C $MC_COUNT -S $MC_SIZE > "/tmp/$1.out" 2>&1 ||
            fail "$1: mckey sender failed"
        nc -w 2 "$RRXE_PEER_IP4" "$3" < /dev/null 2>/dev/null && {
            log "$1: the peer got its datagrams after $i sender runs"
            return 0
        }
    done
    fail "$1: the peer's receiver never completed"
}
