#!/bin/sh
# RoCE v2 wire fuzzing of rrxe0: rrxe_wirefuzz keeps verified RC traffic (RDMA
# WRITE/READ, SEND/RECV, atomics) going between two QPs of rrxe0 while it sends
# malformed and mutated RoCE v2 packets (mostly with a valid ICRC) to the guest's
# own address, UDP port 4791, through a raw socket. Fails on wrong data, a
# live QP failing with a status the spec does not name, no progress, drop
# counters (rcvd_icrc_err, rcvd_hdr_err, rcvd_no_qp) that did not grow, or a
# kernel splat.
# Count: rrxe.fuzz_count=N on the kernel command line (default 100000), sending
# stops after rrxe.fuzz_seconds=T (default 150) in any case; seed: rrxe.fuzz_seed=S
# (default: from the clock, printed). Replay a seed, e.g. on the debug kernel with
# the full count:
#   tools/qemu/run.sh --variant debug --test rrxe_wirefuzz --timeout 20000 \
#       --append "rrxe.fuzz_seed=S rrxe.fuzz_count=1000000 rrxe.fuzz_seconds=0"
# or in a guest shell: rrxe_wirefuzz -d rrxe0 -s S -n N (the program prints its
# replay line at start and on failure).
# topology: single
# timeout: 240
. "$RRXE_LIB"

command -v rrxe_wirefuzz >/dev/null || fail "rrxe_wirefuzz not on PATH: run tools/testing/verbs/build.sh"
count=$(kernel_arg rrxe.fuzz_count 100000)
secs=$(kernel_arg rrxe.fuzz_seconds 150)
seed=$(kernel_arg rrxe.fuzz_seed $(( $(date +%s) % 1000000007 )))
# The debug kernel (KASAN, lockdep) under TCG on a shared machine is slow enough
# to starve the live traffic for a while: wait longer before calling it stuck.
slow=
dmesg | grep -q "KernelAddressSanitizer initialized" && slow="-T 120 -P 300"
load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "seed $seed, $count packets, at most ${secs}s"
log "+ rrxe_wirefuzz -d rrxe0 -g $gid -s $seed -n $count -t $secs $slow"
rrxe_wirefuzz -d rrxe0 -g "$gid" -s "$seed" -n "$count" -t "$secs" $slow
rc=$?
show_counters rrxe0
dmesg | grep -i rrxe | tail -20 | sed 's/^/  dmesg| /'
[ $rc = 0 ] || fail "rrxe_wirefuzz rc=$rc (seed $seed, $count packets)"
