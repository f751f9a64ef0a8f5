#!/bin/sh
# UD multicast over the wire against upstream rxe (rxe on guest A, rrxe on guest B):
# mckey joins 239.1.2.3 through rdma_cm on both guests. First rxe receives on two QPs
# and rrxe sends 50 datagrams to the group: every receiving QP must get every one.
# Then rrxe receives on two QPs and rxe sends until both have 50: rxe transmits UD
# sends from a task after the post returns, and mckey destroys its QP once it has
# posted, so each rxe sender run gets only some of its datagrams out (the same
# happens between two rxe guests).
# topology: pair
# timeout: 300
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/mcast.sh"

READY1=4441 READY2=4442 DONE2=4443
load_interop
wait_for_peer_ping 60
if [ "$RRXE_ROLE" = a ]; then
    mc_receiver mc-recv-rxe "$RRXE_IP4" 2
    timeout 120 nc -l -p $READY1 < /dev/null > /dev/null &
    mc_receiver_done mc-recv-rxe
    wait_for 120 nc -w 2 "$RRXE_PEER_IP4" $READY2 < /dev/null || fail "rrxe's receiver not ready"
    mc_send_until_done mc-send-rxe "$RRXE_IP4" $DONE2
else
    wait_for 120 nc -w 2 "$RRXE_PEER_IP4" $READY1 < /dev/null || fail "rxe's receiver not ready"
    mc_send mc-send-rrxe "$RRXE_IP4"
    mc_receiver mc-recv-rrxe "$RRXE_IP4" 2
    timeout 120 nc -l -p $READY2 < /dev/null > /dev/null &
    mc_receiver_done mc-recv-rrxe
    timeout 120 nc -l -p $DONE2 < /dev/null > /dev/null || fail "guest A did not see the receiver done"
fi
show_counters "$RRXE_DEV"
