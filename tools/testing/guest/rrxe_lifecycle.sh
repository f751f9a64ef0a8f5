#!/bin/sh
# Device lifecycle: the port follows carrier with PORT_ERR/PORT_ACTIVE events,
# `rdma link delete` and net device removal take the device away, one device per
# net device, and removal (link delete, rmmod) while a process holds open objects
# neither hangs nor splats: the process gets IBV_EVENT_DEVICE_FATAL.
# topology: single
# timeout: 180
. "$RRXE_LIB"

gone() { [ ! -e "/sys/class/infiniband/$1" ]; }
port_down() { grep -q DOWN "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null; }

run modprobe -a udp_tunnel ip6_udp_tunnel
run insmod /rrxe/rrxe.ko
run ip link add veth0 type veth peer name veth1
run ip addr add 198.51.100.1/24 dev veth0
run ip link set veth0 up
run ip link set veth1 up
run rdma link add rrxe1 type rrxe netdev veth0
wait_for 20 rdma_dev_ready rrxe1 || fail "rrxe1 not ACTIVE over veth0"

# Carrier follows the peer end; events reach user space.
ibv_asyncwatch -d rrxe1 > /tmp/async1.out 2>&1 &
aw=$!
sleep 1
run ip link set veth1 down
wait_for 10 port_down rrxe1 || fail "port did not go DOWN without carrier"
run ip link set veth1 up
wait_for 10 rdma_dev_ready rrxe1 || fail "port did not come back ACTIVE"
sleep 1
kill $aw 2>/dev/null
cat /tmp/async1.out
grep -q 'PORT_ERR' /tmp/async1.out || fail "no IBV_EVENT_PORT_ERR seen"
grep -q 'PORT_ACTIVE' /tmp/async1.out || fail "no IBV_EVENT_PORT_ACTIVE seen"

# One rrxe device per net device.
if rdma link add rrxe2 type rrxe netdev veth0 2>/tmp/dup.err; then
    fail "a second device on veth0 was accepted"
fi
log "second device on veth0 refused: $(cat /tmp/dup.err)"

run rdma link delete rrxe1
wait_for 10 gone rrxe1 || fail "rrxe1 still there after rdma link delete"

# Removing the net device removes the device.
run rdma link add rrxe1 type rrxe netdev veth0
wait_for 20 rdma_dev_ready rrxe1 || fail "rrxe1 not ACTIVE again"
run ip link del veth0
wait_for 10 gone rrxe1 || fail "rrxe1 still there after its net device was deleted"

# Removal while a process holds a PD, MR, CQ and QP (ibv_rc_pingpong waiting
# for its peer), first by link delete, then by rmmod.
hold_and_remove() {
    what=$1; shift
    load_dev=rrxe0
    run rdma link add $load_dev type rrxe netdev "$RRXE_NETDEV"
    wait_for 20 rdma_dev_ready $load_dev || fail "$load_dev not ACTIVE"
    gid=$(gid_index $load_dev ipv4) || fail "no RoCE v2 IPv4 GID"
    ibv_asyncwatch -d $load_dev > /tmp/async-$what.out 2>&1 &
    aw=$!
    ibv_rc_pingpong -d $load_dev -g "$gid" -p 18515 > /tmp/holder-$what.out 2>&1 &
    holder=$!
    wait_for_port 18515 20
    log "holder $holder has its objects; removing by $what"
    timeout 30 "$@" || fail "removal by $what failed or hung (rc=$?)"
    wait_for 10 gone $load_dev || fail "$load_dev still there after $what"
    wait_for 10 grep -q DEVICE_FATAL /tmp/async-$what.out || {
        cat /tmp/async-$what.out; fail "no IBV_EVENT_DEVICE_FATAL after $what"; }
    kill $holder $aw 2>/dev/null
    wait $holder 2>/dev/null
    log "removal by $what with open objects: done"
}
hold_and_remove linkdel rdma link delete rrxe0
hold_and_remove rmmod rmmod rrxe
grep -q '^rrxe ' /proc/modules && fail "rrxe still loaded"
log "lifecycle ok"
