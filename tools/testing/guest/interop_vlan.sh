#!/bin/sh
# RoCE v2 over a VLAN, against upstream rxe: both guests add eth0.100 (VLAN 100,
# 198.51.100.x/24) and create the soft-RoCE device on eth0 (rxe on guest A, rrxe on
# guest B), whose GID table then holds the VLAN's address too (ib_core adds the
# addresses of eth0's upper devices). rping (rdma_cm: address resolution, CM, RC with
# data verification) and ibv_rc_pingpong run between the VLAN addresses; the traffic
# must leave through eth0.100, i.e. tagged, and come back in through it. On B, rrxe
# first refuses a device on the VLAN device itself (EPERM, as rxe: ib_core would give
# it no GIDs for its addresses).
# topology: pair
# timeout: 240
. "$RRXE_LIB"

self=${RRXE_IP4##*.}
peer=${RRXE_PEER_IP4##*.}
run ip link add link eth0 name eth0.100 type vlan id 100
run ip addr add "198.51.100.$self/24" dev eth0.100
run ip link set eth0.100 up
if [ "$RRXE_ROLE" = b ]; then
    run modprobe rrxe
    ! rdma link add rrxe9 type rrxe netdev eth0.100 2> /tmp/vlan-add.err ||
        fail "rrxe accepted a device on the VLAN device"
    log "rdma link add on eth0.100 refused: $(cat /tmp/vlan-add.err)"
fi
load_interop
RRXE_IP4=198.51.100.$self RRXE_PEER_IP4=198.51.100.$peer
gid=$(gid_index "$RRXE_DEV" ipv4) || fail "no RoCE v2 GID for $RRXE_IP4 on $RRXE_DEV"
vtx0=$(cat /sys/class/net/eth0.100/statistics/tx_packets)
vrx0=$(cat /sys/class/net/eth0.100/statistics/rx_packets)
pair_rping
args="-d $RRXE_DEV -g $gid -n 100 -s 4096 -c"
if [ "$RRXE_ROLE" = a ]; then
    run timeout 120 ibv_rc_pingpong -p 18516 $args
else
    retry_connect 60 rc-client timeout 90 ibv_rc_pingpong -p 18516 $args "$RRXE_PEER_IP4" \
        || fail "ibv_rc_pingpong client (rrxe) rc=$?"
    grep -q '100 iters' /tmp/rc-client.out || fail "client did not complete 100 iterations"
fi
vtx=$(( $(cat /sys/class/net/eth0.100/statistics/tx_packets) - vtx0 ))
vrx=$(( $(cat /sys/class/net/eth0.100/statistics/rx_packets) - vrx0 ))
log "eth0.100 sent $vtx and received $vrx packets"
[ "$vtx" -ge 200 ] && [ "$vrx" -ge 200 ] ||
    fail "only $vtx/$vrx packets through eth0.100: the traffic did not use the VLAN"
show_counters "$RRXE_DEV"
