#!/bin/sh
# UD multicast on rrxe, one guest: mckey (rdma_cm multicast join, UD datagrams to the
# group's QP number 0xFFFFFF) receives on two UD QPs attached to 239.1.2.3 while a
# third QP sends 50 datagrams to the group; every receiving QP must get all of them
# (the IP layer loops the group's datagrams back to this host, and rrxe hands a copy to
# each attached QP). Then the group is left: a datagram sent to it reaches no QP.
# topology: single
# timeout: 240
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/mcast.sh"

load_rrxe rrxe0
mc_receiver mc-recv "$RRXE_IP4" 2
mc_send mc-send "$RRXE_IP4"
mc_receiver_done mc-recv
ip maddr show dev eth0 | grep -q '01:00:5e:01:02:03' && log "eth0 still filters the group's MAC"
show_counters rrxe0
