#!/bin/sh
# The ways a user loads rrxe on a stock kernel, with kmod's tools and rrxe.ko
# installed as `make install` installs it (extra/, indexed by depmod):
#   1. `rdma link add ... type rrxe` alone: the kernel asks for "rdma-link-rrxe",
#      modprobe finds rrxe by that alias and loads udp_tunnel and ip6_udp_tunnel
#      first; the device carries an rping.
#   2. `modprobe rrxe`, `modprobe -r rrxe`: loads and unloads with dependencies.
#   3. `insmod rrxe.ko` without its dependencies fails with unknown symbols (and
#      loads nothing); after `modprobe -a udp_tunnel ip6_udp_tunnel` it works.
# topology: single
# timeout: 180
. "$RRXE_LIB"

loaded() { grep -q "^$1 " /proc/modules; }
gone() { [ ! -e "/sys/class/infiniband/$1" ]; }
none_loaded() {
    for m in rrxe ip6_udp_tunnel udp_tunnel; do
        loaded $m && fail "$m is loaded at the start of step $1"
    done
    return 0
}
unload_all() {
    run modprobe -r rrxe
    # The tunnel modules stay when something else (rdma_rxe) holds them.
    for m in ip6_udp_tunnel udp_tunnel; do loaded $m && run rmmod $m; done
    return 0
}

kver=$(uname -r)
run modinfo -F filename rrxe
case "$(modinfo -F filename rrxe)" in
    /lib/modules/$kver/extra/*) ;;
    *) fail "modprobe finds rrxe outside /lib/modules/$kver/extra" ;;
esac
log "modinfo rrxe depends: $(modinfo -F depends rrxe)"
modinfo -F depends rrxe | grep -q udp_tunnel || fail "depmod records no dependency on udp_tunnel"

# 1. Autoload by `rdma link add`.
none_loaded autoload
run rdma link add rrxe0 type rrxe netdev "$RRXE_NETDEV"
wait_for 20 rdma_dev_ready rrxe0 || fail "rrxe0 not ACTIVE after autoload"
for m in rrxe udp_tunnel ip6_udp_tunnel; do loaded $m || fail "$m not loaded by rdma link add"; done
RRXE_DEV=rrxe0
single_rping
run rdma link delete rrxe0
wait_for 10 gone rrxe0 || fail "rrxe0 still there after rdma link delete"
unload_all
loaded rrxe && fail "rrxe still loaded after modprobe -r"

# 2. modprobe / modprobe -r.
none_loaded modprobe
run modprobe rrxe
for m in rrxe udp_tunnel ip6_udp_tunnel; do loaded $m || fail "$m not loaded by modprobe rrxe"; done
run rdma link add rrxe0 type rrxe netdev "$RRXE_NETDEV"
wait_for 20 rdma_dev_ready rrxe0 || fail "rrxe0 not ACTIVE after modprobe"
# A loaded module with a device: modprobe -r removes the device with it.
run modprobe -r rrxe
wait_for 10 gone rrxe0 || fail "rrxe0 still there after modprobe -r rrxe"
unload_all

# 3. insmod without, then with, the dependencies.
none_loaded insmod
if insmod /rrxe/rrxe.ko 2>/tmp/insmod.err; then
    fail "insmod rrxe.ko without udp_tunnel succeeded"
fi
log "insmod without dependencies: $(cat /tmp/insmod.err)"
loaded rrxe && fail "a failed insmod left rrxe loaded"
dmesg | grep -q 'rrxe: Unknown symbol' || fail "no 'Unknown symbol' message for the failed insmod"
run modprobe -a udp_tunnel ip6_udp_tunnel
run insmod /rrxe/rrxe.ko
run rdma link add rrxe0 type rrxe netdev "$RRXE_NETDEV"
wait_for 20 rdma_dev_ready rrxe0 || fail "rrxe0 not ACTIVE after insmod"
run rdma link delete rrxe0
run rmmod rrxe
log "load paths ok"
