#!/bin/sh
# `make run`'s guest script: load rrxe, create rrxe0 over eth0, show what stock
# rdma-core sees, drive every control verb through librxe, move data over RC
# (ibv_rc_pingpong with buffer checks, RDMA WRITE/READ/atomics), run an rping
# over rrxe, then remove the device and the module.
. "$RRXE_LIB"

banner() { echo; echo "===== $* ====="; }

banner "insmod rrxe.ko; rdma link add rrxe0 type rrxe netdev eth0"
load_rrxe rrxe0
run rdma link show
banner "ibv_devices"
ibv_devices
banner "ibv_devinfo -d rrxe0"
ibv_devinfo -d rrxe0
banner "control verbs through Debian's librxe (rrxe_verbs)"
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
rrxe_verbs -d rrxe0 -g "$gid" || fail "control verbs failed"
banner "RC SEND/RECV over rrxe: ibv_rc_pingpong -c (data checked)"
server_client rc timeout 60 ibv_rc_pingpong -d rrxe0 -g "$gid" -n 100 -s 4096 -c
banner "RC WRITE, READ, atomics, SRQ limit, RNR over rrxe (rrxe_verbs datapath)"
rrxe_verbs -d rrxe0 -g "$gid" datapath || fail "datapath cases failed"
banner "rping over rrxe (rdma_cm: CM MADs on the GSI QP, then RC), 20 verified pings"
single_rping
banner "rdma link delete rrxe0; rmmod rrxe"
run rdma link delete rrxe0
run rmmod rrxe
echo
echo "make run: done"
