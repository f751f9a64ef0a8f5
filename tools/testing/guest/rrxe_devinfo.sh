#!/bin/sh
# rrxe registers a RoCE v2 device that stock rdma-core lists and opens:
# ibv_devices shows rrxe0, ibv_devinfo -v shows an active Ethernet port with the
# netdev's MTU and RoCE v2 GIDs for the guest's IPv4 and IPv6 addresses. The
# device sits under eth0's parent (the virtio function), so
# /sys/class/infiniband/rrxe0/device/net/ names eth0, as for a NIC.
# topology: single
# timeout: 120
. "$RRXE_LIB"

load_rrxe rrxe0
ibv_devices > /tmp/devices.out 2>&1 || fail "ibv_devices failed: $(cat /tmp/devices.out)"
cat /tmp/devices.out
grep -q '^ *rrxe0 ' /tmp/devices.out || fail "ibv_devices does not list rrxe0"

ibv_devinfo -v -d rrxe0 > /tmp/devinfo.out 2>&1 || fail "ibv_devinfo failed: $(cat /tmp/devinfo.out)"
cat /tmp/devinfo.out
expect() { grep -Eq "$1" /tmp/devinfo.out || fail "ibv_devinfo -v lacks: $1"; }
expect 'transport:[[:space:]]+InfiniBand \(0\)'
expect 'state:[[:space:]]+PORT_ACTIVE \(4\)'
expect 'link_layer:[[:space:]]+Ethernet'
expect 'max_mtu:[[:space:]]+4096 \(5\)'
# eth0 has MTU 1500: 1500 minus 80 bytes of headers fits an IB MTU of 1024.
expect 'active_mtu:[[:space:]]+1024 \(3\)'
expect 'max_qp:[[:space:]]+1048560'
expect 'max_cqe:[[:space:]]+32767'
expect 'atomic_cap:[[:space:]]+ATOMIC_HCA \(1\)'
expect 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:192\.0\.2\.1, RoCE v2'
expect 'GID\[ *[0-9]+\]:[[:space:]]+2001:db8::1, RoCE v2'
expect 'GID\[ *[0-9]+\]:[[:space:]]+fe80::[0-9a-f:]+, RoCE v2'

# In the device model next to its net device.
[ -e /sys/class/infiniband/rrxe0/device/net/"$RRXE_NETDEV" ] \
    || fail "/sys/class/infiniband/rrxe0/device/net/$RRXE_NETDEV does not exist"
[ "$(readlink -f /sys/class/infiniband/rrxe0/device)" = "$(readlink -f /sys/class/net/"$RRXE_NETDEV"/device)" ] \
    || fail "rrxe0's parent is not $RRXE_NETDEV's"
log "rrxe0/device: $(readlink -f /sys/class/infiniband/rrxe0/device)"

# The MTU follows the net device.
run ip link set "$RRXE_NETDEV" mtu 4200
ibv_devinfo -d rrxe0 | grep -Eq 'active_mtu:[[:space:]]+4096 \(5\)' || fail "active_mtu did not follow MTU 4200"
run ip link set "$RRXE_NETDEV" mtu 1500
log "rrxe0 listed and opened by stock rdma-core"
