#!/bin/sh
# Verbs fuzzing of rrxe0: rrxe_verbsfuzz makes random sequences of verbs with
# random attributes through libibverbs/librxe (PDs, MRs, CQs, QPs, SRQs, AHs,
# posts and polls on QPs in any state, destroys in random order, contexts closed
# with objects left) and sends malformed uverbs write() commands, ioctl()s,
# mmap()s and ring contents straight to the device. Fails if the process is
# killed, a call fails with an errno user space must not see, an object in use
# is destroyed, the device no longer carries a verified RDMA WRITE at the end,
# or the kernel splats.
# Count: rrxe.fuzz_count=N on the kernel command line (default 100000), calls stop
# after rrxe.fuzz_seconds=T (default 150) in any case; seed: rrxe.fuzz_seed=S
# (default: from the clock, printed). Replay a seed, e.g. on the debug kernel with
# the full count:
#   tools/qemu/run.sh --variant debug --test rrxe_verbsfuzz --timeout 9000 \
#       --append "rrxe.fuzz_seed=S rrxe.fuzz_count=100000 rrxe.fuzz_seconds=0"
# or in a guest shell: rrxe_verbsfuzz -d rrxe0 -s S -n N [-v] (-v prints every call).
# topology: single
# timeout: 240
. "$RRXE_LIB"

command -v rrxe_verbsfuzz >/dev/null || fail "rrxe_verbsfuzz not on PATH: run tools/testing/verbs/build.sh"
count=$(kernel_arg rrxe.fuzz_count 100000)
secs=$(kernel_arg rrxe.fuzz_seconds 150)
seed=$(kernel_arg rrxe.fuzz_seed $(( $(date +%s) % 1000000007 )))
load_rrxe rrxe0
log "seed $seed, $count calls, at most ${secs}s"
log "+ rrxe_verbsfuzz -d rrxe0 -s $seed -n $count -t $secs"
rrxe_verbsfuzz -d rrxe0 -s "$seed" -n "$count" -t "$secs"
rc=$?
dmesg | grep -i rrxe | tail -20 | sed 's/^/  dmesg| /'
[ $rc = 0 ] || fail "rrxe_verbsfuzz rc=$rc (seed $seed, $count calls)"
