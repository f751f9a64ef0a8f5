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
#   rrxe.ab.profile=N  after the rounds, run each mode N times over with the tree's
#                      build under perf (tools/bench/ab.sh --profile adds it):
#                      "AB-PROFILE MODE self|total ..." lines, the symbols' shares
#                      of the guest instructions (cpu-clock under -icount)
# topology: single
# timeout: 1800
. "$RRXE_LIB"

ROUNDS=$(kernel_arg rrxe.ab.rounds 3)
ITERS=$(kernel_arg rrxe.ab.iters 5000)
PROFILE=$(kernel_arg rrxe.ab.profile 0)
MODES="uverbs doorbell read atomic"
PERF="env LD_LIBRARY_PATH=/rrxe/perf/lib /rrxe/perf/perf"

# load NAME: load build NAME and make rrxe0; GID is its IPv4 GID index.
load() {
    local name=$1
    if [ "$name" = base ]; then
        run modprobe udp_tunnel
        run modprobe ip6_udp_tunnel
        run insmod /rrxe/base.ko
    else
        run modprobe rrxe
    fi
    run rdma link add rrxe0 type rrxe netdev "$RRXE_NETDEV"
    wait_for 20 rdma_dev_ready rrxe0 || fail "rrxe0 port 1 not ACTIVE ($name)"
    GID=$(gid_index rrxe0 ipv4) || fail "no IPv4 GID on rrxe0 ($name)"
}

# unload: delete rrxe0, unload rrxe.
unload() {
    run rdma link delete rrxe0
    run rmmod rrxe
}

# build ROUND NAME: load build NAME, one run per mode, unload it.
build() {
    local round=$1 name=$2 m out v
    load "$name"
    for m in $MODES; do
        if out=$(rrxe_floor -d rrxe0 -g "$GID" -n "$ITERS" -m "$m") &&
            v=$(echo "$out" | sed -n 's/.*t_typical_us=\([0-9.]*\).*/\1/p') && [ -n "$v" ]; then
            echo "AB-RUN $round $name $m $v"
        else
            echo "AB-RUN $round $name $m FAILED $out"
        fi
    done
    unload
}

# profile: each mode with the tree's build, PROFILE times the iterations of a run,
# under perf. Under -icount, cpu-clock counts guest instructions: a sample every
# 10,000 of the busy vCPU's (rrxe_floor's own, kernel included, as a READ is served
# in its doorbell), so the shares are shares of instructions.
profile() {
    local m f
    load new
    for m in $MODES; do
        f=/tmp/ab-$m.perf
        if ! $PERF record -q -g -e cpu-clock -c 10000 -o $f -- \
            rrxe_floor -d rrxe0 -g "$GID" -n $((ITERS * PROFILE)) -m "$m" > /tmp/ab-$m.out 2>&1; then
            echo "AB-PROFILE $m FAILED $(tail -3 /tmp/ab-$m.out)"
            continue
        fi
        $PERF report -i $f --stdio --no-children --sort sym -g none --percent-limit 0.7 2>/dev/null |
            grep -v '^#' | grep -v '^$' | head -40 | sed "s/^/AB-PROFILE $m self /"
        # Inclusive shares: what a function and everything it calls cost.
        $PERF report -i $f --stdio --children --sort sym -g none --percent-limit 3 2>/dev/null |
            grep -v '^#' | grep -v '^$' | head -60 | sed "s/^/AB-PROFILE $m total /"
        # The hottest places in rrxe's own code, as SYMBOL+OFFSET (what a build
        # with line tables maps to source: addr2line -i -e rrxe.ko; the crate is
        # rrxe_main, in every one of its mangled names).
        $PERF script -i $f -G -F ip,sym,symoff,dso 2>/dev/null | grep -F rrxe_main |
            awk '{ print $2 }' | sort | uniq -c | sort -rn | head -120 |
            sed "s/^ */AB-PROFILE $m addr /"
        rm -f $f
    done
    unload
}

[ -f /rrxe/base.ko ] || fail "/rrxe/base.ko is not in this initramfs (tools/bench/ab.sh adds it)"
r=1
while [ $r -le "$ROUNDS" ]; do
    build $r base
    build $r new
    r=$((r + 1))
done
[ "$PROFILE" = 0 ] || profile
exit 0
