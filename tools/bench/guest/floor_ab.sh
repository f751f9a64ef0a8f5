#!/bin/sh
# Benchmark (not a test): two builds of rrxe in one boot, in instruction time
# (tools/bench/ab.sh boots this guest with tools/qemu/run.sh --icount). Each round
# loads the base build (/rrxe/base.ko, with the modules it needs loaded first), runs
# rrxe_floor's modes on it, unloads it, and does the same with the tree's build
# (modprobe rrxe). Prints "AB-RUN ROUND base|new MODE T_TYPICAL_US" per run (a
# microsecond of guest time is 1,000 guest instructions), or "AB-RUN ... FAILED".
#
# Kernel command line (tools/bench/ab.sh sets it):
#   rrxe.ab.rounds=R   rounds (default 3)
#   rrxe.ab.iters=N    iterations per run (default 5000)
# topology: single
# timeout: 1800
. "$RRXE_LIB"

ROUNDS=$(kernel_arg rrxe.ab.rounds 3)
ITERS=$(kernel_arg rrxe.ab.iters 5000)
MODES="uverbs doorbell read"

# build ROUND NAME: load build NAME, one run per mode, unload it.
build() {
    local round=$1 name=$2 gid m out v
    if [ "$name" = base ]; then
        run modprobe udp_tunnel
        run modprobe ip6_udp_tunnel
        run insmod /rrxe/base.ko
    else
        run modprobe rrxe
    fi
    run rdma link add rrxe0 type rrxe netdev "$RRXE_NETDEV"
    wait_for 20 rdma_dev_ready rrxe0 || fail "rrxe0 port 1 not ACTIVE ($name)"
    gid=$(gid_index rrxe0 ipv4) || fail "no IPv4 GID on rrxe0 ($name)"
    for m in $MODES; do
        if out=$(rrxe_floor -d rrxe0 -g "$gid" -n "$ITERS" -m "$m") &&
            v=$(echo "$out" | sed -n 's/.*t_typical_us=\([0-9.]*\).*/\1/p') && [ -n "$v" ]; then
            echo "AB-RUN $round $name $m $v"
        else
            echo "AB-RUN $round $name $m FAILED $out"
        fi
    done
    run rdma link delete rrxe0
    run rmmod rrxe
}

[ -f /rrxe/base.ko ] || fail "/rrxe/base.ko is not in this initramfs (tools/bench/ab.sh adds it)"
r=1
while [ $r -le "$ROUNDS" ]; do
    build $r base
    build $r new
    r=$((r + 1))
done
exit 0
