#!/bin/sh
# RC datapath of rrxe through the stock libibverbs/librxe: the "datapath" cases of the
# rrxe_verbs program (rc_loop: SEND/RECV, SEND_WITH_IMM, RDMA WRITE(_WITH_IMM), RDMA
# READ, atomics, a 64-WR burst, a bad rkey; srq_limit; rnr; cq_overflow) on RC connections between
# two QPs of rrxe0, looped back to its own address. Baseline: rxe_verbs. Every wait in
# the program is bounded, so a device without a datapath fails rather than hangs.
# topology: single
# timeout: 180
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "+ rrxe_verbs -v -d rrxe0 -g $gid datapath"
timeout 150 rrxe_verbs -v -d rrxe0 -g "$gid" datapath
rc=$?
show_counters rrxe0
dmesg | grep -i rrxe | tail -40 | sed 's/^/  dmesg| /'
[ $rc = 0 ] || fail "rrxe_verbs rc=$rc"
