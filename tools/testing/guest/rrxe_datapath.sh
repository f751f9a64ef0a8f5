#!/bin/sh
# RC datapath of rrxe through the stock libibverbs/librxe: the "datapath" cases of the
# rrxe_verbs program (rc_loop: SEND/RECV, SEND_WITH_IMM, RDMA WRITE(_WITH_IMM), RDMA
# READ, atomics, a 64-WR burst, a bad rkey; srq_limit; rnr; cq_overflow) on RC connections between
# two QPs of rrxe0, looped back to its own address. Baseline: rxe_verbs. Every wait in
# the program is bounded, so a device without a datapath fails rather than hangs.
# topology: single
# timeout: 180
. "$RRXE_LIB"

rrxe_verbs_cases datapath
